"""Running Django's WSGI handler for an ASGI request: the environ of a scope, and the
handler run to the end. Shared by the server's request threads (config.http) and the
HTTP helper processes (config.helpers), so that the helpers need nothing of config.http.
"""

from __future__ import annotations

import sys
from typing import Any

# Status, headers (ASGI's bytes) and the body's chunks.
Response = tuple[int, list[tuple[bytes, bytes]], list[bytes]]


def environ_for(scope: dict[str, Any], body: Any) -> dict[str, Any]:
    """The WSGI environ of an ASGI HTTP scope (PEP 3333; headers as Django's ASGI handler joins them)."""
    script_name = scope.get("root_path", "")
    path = scope["path"]
    if script_name and path.startswith(script_name):
        path = path[len(script_name) :]
    server = scope.get("server") or ("localhost", 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": script_name.encode().decode("latin1"),
        "PATH_INFO": path.encode().decode("latin1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] if server[1] is not None else 80),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": body,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if client := scope.get("client"):
        environ["REMOTE_ADDR"] = client[0]
        environ["REMOTE_PORT"] = str(client[1])
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin1").upper().replace("-", "_")
        key = name if name in {"CONTENT_LENGTH", "CONTENT_TYPE"} else f"HTTP_{name}"
        value = raw_value.decode("latin1")
        if key in environ:
            value = environ[key] + ("; " if key == "HTTP_COOKIE" else ",") + value
        environ[key] = value
    return environ


def call_wsgi(app: Any, environ: dict[str, Any]) -> Response:
    """Run a WSGI application to the end: status, headers (ASGI's bytes) and body chunks."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started[:] = [status, headers]
        return chunks.append

    chunks: list[bytes] = []
    result = app(environ, start_response)
    try:
        # The whole body is produced here, on the request's thread: a streamed response
        # (FileResponse) reads its file and the database on the thread that owns them.
        chunks.extend(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    status, headers = started
    return (
        int(status.split(" ", 1)[0]),
        [(name.lower().encode("latin1"), value.encode("latin1")) for name, value in headers],
        chunks,
    )
