"""The fsched node agent: registers nodes with the controller and runs their jobs.

Standalone on purpose (stdlib, websockets, psutil, ClusterShell): it never imports
Django or the controller. Entry point: ``agent.main.main(argv)`` (``fsched agent``,
``python -m agent``).
"""
