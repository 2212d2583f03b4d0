"""HTTP client for the fsched REST API (docs/api.md), on a bare socket.

Why not ``http.client``: importing it pulls in ``email.parser`` and ``ssl`` and
costs ~30 ms, more than half of the 50 ms start-up budget of one ``sbatch``.
The subset of HTTP/1.1 the API needs (JSON bodies, ``Content-Length`` or
chunked responses, keep-alive) is small.  Even ``socket`` is avoided for plain
http: it builds its IntEnum classes at import (~3 ms) and ``create_connection``
loads the idna codec; ``_socket`` does the same work.  https imports
``socket`` and ``ssl`` when it is used.  JSON goes through ``cli.jsonwire``
rather than ``json`` for the same reason.

Where to talk to and as whom, first found wins:

* URL: ``$FSCHED_URL``, the credentials file's ``url``, ``http://127.0.0.1:8000``;
* token: ``$FSCHED_TOKEN``, the credentials file's ``token``; without either, inside a
  job, the job credential its agent handed it (``$FSCHED_JOB_CREDENTIAL``: acts on that
  job only, while it runs, as Slurm's munge credential serves srun in a job);
* credentials file: ``$FSCHED_CLI_CONFIG``, ``$XDG_CONFIG_HOME/fsched/cli.json``,
  ``~/.config/fsched/cli.json`` holding ``{"url", "token", "username"}``.

Errors are exceptions carrying the message to print; ``cli.main`` prints any
that a command did not word itself and exits 1.
"""

from __future__ import annotations

import _socket
import os

from cli.jsonwire import dumps, loads

DEFAULT_URL = "http://127.0.0.1:8000"
CONNECT_FAILURE = "Unable to contact slurm controller (connect failure)"
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~,:")


class CliError(Exception):
    """An error that ends the command with a message on stderr and a non-zero exit."""

    code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def render(self, prog: str) -> str:
        return f"{prog}: error: {self.message}"


class ConnectError(CliError):
    """The controller could not be reached; worded as Slurm's commands word it, then
    (second line) the URL that was tried, since a wrong FSCHED_URL looks just the same."""

    def __init__(self, message: str, url: str = "", why: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.why = why

    def render(self, prog: str) -> str:  # the same words whichever command ran
        text = f"fsched: error: {self.message}"
        if self.url:
            text += f"\nfsched: error: tried {self.url}" + (f": {self.why}" if self.why else "")
        return text


class OutcomeUnknown(ConnectError):
    """The connection broke after the request was sent and before its answer: the
    controller may or may not have acted on it.  Worded as a connect failure, as before,
    for the commands that do not tell the two apart."""

    def __init__(self, message: str = CONNECT_FAILURE, url: str = "", why: str = "") -> None:
        super().__init__(message, url, why)


class ApiError(CliError):
    """A 4xx/5xx answer: ``message`` is the API's ``error`` (already Slurm-worded).

    ``retry_after``: the seconds of a 503's ``Retry-After`` (the controller's database is
    restarting), else None."""

    def __init__(
        self, status: int, message: str, payload: object = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.payload = payload if isinstance(payload, dict) else {}
        self.retry_after = retry_after

    @property
    def not_stored(self) -> bool:
        """Whether the controller said this request stored nothing (a 503 of its own)."""
        return self.status == 503 and self.payload.get("stored") is False


# ---------------------------------------------------------------- config


def config_path(environ: dict | None = None) -> str:
    env = os.environ if environ is None else environ
    if env.get("FSCHED_CLI_CONFIG"):
        return env["FSCHED_CLI_CONFIG"]
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return os.path.join(base, "fsched", "cli.json")


def load_config(environ: dict | None = None) -> dict:
    """The credentials file's content, ``{}`` when absent or unreadable."""
    try:
        with open(config_path(environ), encoding="utf-8") as handle:
            data = loads(handle.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_config(data: dict, environ: dict | None = None) -> str:
    """Write the credentials file with mode 0600 (it holds a token); return its path."""
    import json  # noqa: PLC0415 - only `fsched login` writes the file

    path = config_path(environ)
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode under O_CREAT
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    return path


def settings(environ: dict | None = None) -> tuple[str, str | None, str | None]:
    """(url, token, username) from the environment and the credentials file."""
    env = os.environ if environ is None else environ
    cfg = load_config(env)
    url = env.get("FSCHED_URL") or cfg.get("url") or DEFAULT_URL
    token = env.get("FSCHED_TOKEN") or cfg.get("token")
    return url, token, cfg.get("username")


def env_timeout(environ: dict | None = None) -> float:
    """``$FSCHED_TIMEOUT``, seconds (60 when unset); a mistyped one is refused naming the
    variable, as the controller's settings are (a bare ValueError named nothing)."""
    env = os.environ if environ is None else environ
    raw = (env.get("FSCHED_TIMEOUT") or "").strip()
    if not raw:
        return 60.0
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):  # NaN fails the comparison too
        raise CliError(f"FSCHED_TIMEOUT={raw!r}: expected a number of seconds greater than 0")
    return value


def current_user(environ: dict | None = None) -> str:
    """The user the API knows us as (credentials file), else the login name."""
    env = os.environ if environ is None else environ
    user = load_config(env).get("username")
    if user:
        return user
    return env.get("USER") or env.get("LOGNAME") or str(os.getuid())


# ------------------------------------------------------------------ http


def quote(value: str) -> str:
    """Percent-encode a query value (``node[01-02]`` -> ``node%5B01-02%5D``)."""
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in str(value).encode())


def query_string(params: dict | None) -> str:
    if not params:
        return ""
    items = [f"{quote(k)}={quote(v)}" for k, v in params.items() if v is not None and v != ""]
    return "?" + "&".join(items) if items else ""


def split_url(url: str) -> tuple[str, str, int, str]:
    """``https://host:8443/prefix/`` -> ``("https", "host", 8443, "/prefix")``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "http", url
    scheme = scheme.lower()
    if scheme not in ("http", "https"):
        raise CliError(f"Invalid FSCHED_URL {url!r}: only http:// and https:// are supported")
    hostport, _, path = rest.partition("/")
    host, port = hostport, 443 if scheme == "https" else 80
    if hostport.startswith("["):  # [::1]:8000
        host, _, after = hostport[1:].partition("]")
        if after.startswith(":"):
            port = int(after[1:])
    elif ":" in hostport:
        host, _, port_text = hostport.rpartition(":")
        port = int(port_text)
    return scheme, host, port, "/" + path.strip("/") if path.strip("/") else ""


class Client:
    """One keep-alive connection to the controller, JSON in and out."""

    def __init__(self, url: str | None = None, token: str | None = None, timeout: float | None = None):
        env_url, env_token, _user = settings() if url is None or token is None else (url, token, None)
        self.url = url or env_url
        self.token = token if token is not None else env_token
        # No token of the caller's own: the job's credential, when running inside a job.
        self.job_credential = None if self.token else os.environ.get("FSCHED_JOB_CREDENTIAL") or None
        self.scheme, self.host, self.port, self.prefix = split_url(self.url)
        self.timeout = timeout if timeout is not None else env_timeout()
        self._sock = None  # a _socket.socket (or an ssl.SSLSocket)
        self._buffer = b""

    # -- connection ---------------------------------------------------------
    def _connect(self, patience: float = 0.0):
        """A new connection; while it is refused, try again for up to ``patience`` seconds
        (a controller being restarted is refusing connections for a moment)."""
        if patience <= 0:
            return self._connect_once()
        import time  # noqa: PLC0415 - only a retried submission waits

        deadline = time.monotonic() + patience
        while True:
            try:
                return self._connect_once()
            except ConnectError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.25)

    def _connect_once(self):
        # A bytes host keeps getaddrinfo from loading the idna codec.
        host = self.host.encode("idna") if not self.host.isascii() else self.host.encode()
        sock = None
        failure = ""
        try:
            for family, kind, proto, _name, address in _socket.getaddrinfo(
                host, self.port, 0, _socket.SOCK_STREAM
            ):
                sock = _socket.socket(family, kind, proto)
                sock.settimeout(self.timeout)
                try:
                    sock.connect(address)
                    break
                except OSError as exc:
                    failure = exc.strerror or str(exc)
                    sock.close()
                    sock = None
        except OSError as exc:  # unknown host
            raise ConnectError(CONNECT_FAILURE, self.url, exc.strerror or str(exc)) from exc
        if sock is None:  # refused or unreachable on every address
            raise ConnectError(CONNECT_FAILURE, self.url, failure)
        sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        if self.scheme == "https":
            import socket  # noqa: PLC0415 - only https pays for socket and ssl
            import ssl  # noqa: PLC0415

            context = ssl.create_default_context()
            if os.environ.get("FSCHED_CA_BUNDLE"):
                context.load_verify_locations(os.environ["FSCHED_CA_BUNDLE"])
            plain = socket.socket(sock.family, sock.type, sock.proto, fileno=sock.detach())
            sock = context.wrap_socket(plain, server_hostname=self.host)
        self._buffer = b""
        return sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    # -- requests -----------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        params: dict | None = None,
        *,
        headers: dict[str, str] | None = None,
        connect_patience: float = 0.0,
    ) -> object:
        """Send one request; return the decoded JSON (``None`` for an empty body).

        Raises ``ApiError`` for a 4xx/5xx answer, ``ConnectError`` when the
        controller cannot be reached, and ``OutcomeUnknown`` (a ``ConnectError``)
        when the connection broke after the request was sent.
        """
        target = self.prefix + path + query_string(params)
        payload = b"" if body is None else dumps(body).encode()
        lines = [
            f"{method} {target} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "User-Agent: fsched-cli",
            "Accept: application/json",
            "Connection: keep-alive",
        ]
        if self.token:
            lines.append(f"Authorization: Token {self.token}")
        elif self.job_credential:
            lines.append(f"Authorization: Job {self.job_credential}")
        lines.extend(f"{name}: {value}" for name, value in (headers or {}).items())
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append("Content-Type: application/json")
            lines.append(f"Content-Length: {len(payload)}")
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + payload
        status, reason, answer_headers, data = self._exchange(raw, connect_patience)
        try:
            return self._decode(status, reason, answer_headers, data)
        except ApiError as exc:
            if exc.status == 400 and not exc.payload and data.lstrip()[:1] == b"<":
                # Django's page for a Host it does not serve: the API itself always answers
                # 400 in JSON, so an HTML one means the URL's host name was refused.
                exc.message = (
                    f"HTTP 400 Bad Request from {self.url}: the controller does not serve the host "
                    f"name {self.host!r} (add it to its FSCHED_ALLOWED_HOSTS)"
                )
            raise

    def get(self, path: str, params: dict | None = None) -> object:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: object = None) -> object:
        return self.request("POST", path, body=body if body is not None else {})

    def patch(self, path: str, body: object) -> object:
        return self.request("PATCH", path, body=body)

    def get_all(self, path: str, params: dict | None = None) -> list:
        """Every row of a paginated list (``limit``/``offset``), in the API's order."""
        params = dict(params or {})
        params.setdefault("limit", 100000)
        rows: list = []
        while True:
            page = self.get(path, {**params, "offset": len(rows)} if rows else params)
            if isinstance(page, list):  # an unpaginated list is the whole answer
                return rows + page
            results = page.get("results", []) if isinstance(page, dict) else []
            rows.extend(results)
            count = page.get("count") if isinstance(page, dict) else None
            if not results or not isinstance(count, int) or len(rows) >= count or not page.get("next"):
                return rows

    # -- wire ---------------------------------------------------------------
    def _exchange(self, raw: bytes, connect_patience: float = 0.0) -> tuple[int, str, dict, bytes]:
        reused = self._sock is not None
        if self._sock is None:
            self._sock = self._connect(connect_patience)
        try:
            self._sock.sendall(raw)
            return self._read_response()
        except TimeoutError as exc:
            self.close()
            raise CliError("Socket timed out on send/recv operation") from exc
        except (ConnectionError, _Closed):
            self.close()
            if not reused:
                raise OutcomeUnknown(url=self.url, why="connection closed before the answer") from None
            # The server closed an idle keep-alive connection before reading
            # our request: nothing was processed, so one retry is safe.
            self._sock = self._connect()
            try:
                self._sock.sendall(raw)
                return self._read_response()
            except (ConnectionError, _Closed):
                self.close()
                raise OutcomeUnknown(url=self.url, why="connection closed before the answer") from None

    def _recv(self) -> bytes:
        assert self._sock is not None
        chunk = self._sock.recv(65536)
        if not chunk:
            raise _Closed
        return chunk

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self._buffer:
            self._buffer += self._recv()
        head, _, self._buffer = self._buffer.partition(marker)
        return head

    def _read_exact(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._buffer += self._recv()
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _read_response(self) -> tuple[int, str, dict, bytes]:
        while True:
            head = self._read_until(b"\r\n\r\n").decode("latin-1")
            status_line, *header_lines = head.split("\r\n")
            parts = status_line.split(" ", 2)
            status = int(parts[1])
            if status != 100:  # skip "100 Continue"
                break
        headers = {}
        for line in header_lines:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._read_chunked()
        elif "content-length" in headers:
            body = self._read_exact(int(headers["content-length"]))
        else:  # body runs to the end of the connection
            chunks = [self._buffer]
            self._buffer = b""
            try:
                while True:
                    chunks.append(self._recv())
            except _Closed:
                pass
            body = b"".join(chunks)
            headers["connection"] = "close"
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, parts[2] if len(parts) > 2 else "", headers, body

    def _read_chunked(self) -> bytes:
        chunks = []
        while True:
            size = int(self._read_until(b"\r\n").split(b";")[0], 16)
            if size == 0:
                self._read_until(b"\r\n")  # (no trailers expected) final CRLF
                return b"".join(chunks)
            chunks.append(self._read_exact(size))
            self._read_exact(2)

    @staticmethod
    def _decode(status: int, reason: str, headers: dict, data: bytes) -> object:
        try:
            payload = loads(data) if data.strip() else None
        except ValueError:
            payload = None
        if status < 400:
            return payload
        message = None
        if isinstance(payload, dict):
            message = payload.get("error") or payload.get("detail")
            if message is None and payload:  # DRF field errors: {"field": ["msg"]}
                key, value = next(iter(payload.items()))
                message = f"{key}: {value[0] if isinstance(value, list) and value else value}"
        if status == 401:
            message = f"{message or 'Authentication required'} (run `fsched login`)"
        elif status == 403 and not message:
            message = "Access/permission denied"
        elif status == 404 and not message:
            message = "Not found"
        elif status == 503 and not message:  # a proxy's 503: the controller did not answer
            message = f"Controller unavailable (HTTP 503 {reason}".strip() + "): check before retrying"
        retry_after = None
        if status == 503 and headers.get("retry-after", "").strip().isdigit():
            retry_after = float(headers["retry-after"])
        raise ApiError(status, str(message or f"HTTP {status} {reason}".strip()), payload, retry_after)


class _Closed(Exception):
    """The peer closed the connection."""
