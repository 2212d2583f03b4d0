from tests.e2e.harness import cluster  # noqa: F401 - the fixture, shared by the e2e modules
