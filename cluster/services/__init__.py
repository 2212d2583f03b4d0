"""Every operation that changes the cluster is one function here.

The REST API, the admin, the agent endpoint, the cycles and the tests all call these; each
validates, writes in one transaction and publishes on commit.
"""
