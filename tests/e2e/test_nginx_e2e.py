"""docs/nginx.md's site, as written there, in front of a real controller: nginx on loopback
with a self-signed certificate (openssl), the API and the CLI over https with a token, an
agent over wss://, the console's login form through CSRF with the trusted origin, and a
static file served by nginx's alias. Skipped where nginx or openssl is missing."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from websockets.sync.client import connect

from tests.e2e.harness import ROOT, _modes, all_up, free_port, make_cluster

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("nginx") is None, reason="needs nginx (apt-get install nginx-light)"),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl"),
]

WEB_PASSWORD = "proxy-test-Passw0rd-9"


def doc_site(*, port: int, backend: int, cert: Path, key: Path, static: Path) -> str:
    """The ```nginx block of docs/nginx.md with its example names replaced by this test's."""
    text = (ROOT / "docs" / "nginx.md").read_text(encoding="utf-8")
    site = re.search(r"```nginx\n(.*?)```", text, re.DOTALL).group(1)
    replacements = {
        "listen 443 ssl;": f"listen 127.0.0.1:{port} ssl;",
        "server_name ctl.example.org;": "server_name 127.0.0.1;",
        "/etc/ssl/fsched/fullchain.pem": str(cert),
        "/etc/ssl/fsched/privkey.pem": str(key),
        "/var/lib/fsched/static/": f"{static}/",
        "http://127.0.0.1:8000": f"http://127.0.0.1:{backend}",
    }
    for old, new in replacements.items():
        assert old in site, f"docs/nginx.md's site no longer holds {old!r}"
        site = site.replace(old, new)
    return site


def nginx_conf(work: Path, site: str) -> str:
    # Started as root, nginx's workers would run as nobody and be refused the 0700 state
    # directory (docs/nginx.md, "Static files"): here they keep the test's own user.
    user = "user root;" if os.geteuid() == 0 else ""
    return f"""
{user}
pid {work}/nginx.pid;
error_log {work}/error.log warn;
worker_processes 1;
events {{ worker_connections 256; }}
http {{
    include /etc/nginx/mime.types;
    access_log {work}/access.log;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
{site}
}}
"""


def self_signed(work: Path) -> tuple[Path, Path]:
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def wait_port(port: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


@pytest.fixture(scope="module", params=_modes())
def proxied(request, tmp_path_factory):
    mode = request.param
    work = tmp_path_factory.mktemp("nginx")
    port = free_port()
    origin = f"https://127.0.0.1:{port}"
    c = make_cluster(
        tmp_path_factory,
        mode,
        env={"FSCHED_BEHIND_PROXY": "1", "FSCHED_HTTPS": "1", "FSCHED_CSRF_TRUSTED_ORIGINS": origin},
    )
    c.manage("collectstatic", "--no-input", "-v", "0")
    static = c.state_dir / "static"
    # Only in STATIC_ROOT: the server's own handler serves from the checkout's finders,
    # so a 200 for this file is nginx's alias at work.
    (static / "nginx-probe.txt").write_text("served by nginx\n")
    c.env["DJANGO_SUPERUSER_PASSWORD"] = WEB_PASSWORD
    c.manage("createsuperuser", "--no-input", "--username", "web", "--email", "web@example.org")
    cert, key = self_signed(work)
    conf = work / "nginx.conf"
    conf.write_text(nginx_conf(work, doc_site(port=port, backend=c.port, cert=cert, key=key, static=static)))
    check = subprocess.run(
        ["nginx", "-t", "-c", str(conf), "-p", str(work)], check=False, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
    nginx = None
    try:
        c.start_server()
        if mode == "distributed":
            c.start_celery()
        nginx = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(work), "-g", "daemon off;"])
        wait_port(port)
        # The agent trusts the certificate through Python's default store (SSL_CERT_FILE).
        c.env["SSL_CERT_FILE"] = str(cert)
        c.start_agent(None, "--controller", f"wss://127.0.0.1:{port}")
        c.proxy_env = {"FSCHED_URL": origin, "FSCHED_CA_BUNDLE": str(cert)}
        c.origin, c.cert, c.proxy_port = origin, cert, port
        c.wait_for("all demo nodes idle through the proxy", lambda: all_up(proxied_nodes(c)))
        yield c
    finally:
        if nginx is not None:
            nginx.terminate()
            nginx.wait(10)
        c.stop()


def proxied_nodes(c) -> dict[str, dict]:
    """Each node's state through the proxy, from scontrol's JSON (Slurm's state list, joined
    with + as the API's state string is)."""
    out = c.cli("scontrol", "show", "node", "--json", env=c.proxy_env).stdout
    return {n["name"]: {"state": "+".join(n["state"])} for n in json.loads(out)["nodes"]}


def tls(c) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(c.cert))


def test_the_api_answers_a_token_over_https(proxied):
    token = json.loads((proxied.state_dir / "cli.json").read_text())["token"]
    request = urllib.request.Request(  # noqa: S310 - https to loopback
        proxied.origin + "/api/nodes/", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, context=tls(proxied), timeout=10) as response:  # noqa: S310 - loopback
        body = json.loads(response.read())
    assert response.status == 200
    assert body
    unauthenticated = urllib.request.Request(proxied.origin + "/api/nodes/")  # noqa: S310 - loopback
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(unauthenticated, context=tls(proxied), timeout=10)  # noqa: S310 - loopback
    assert refused.value.code in (401, 403)


def test_a_job_submitted_through_the_proxy_runs_on_the_agent_connected_over_wss(proxied, tmp_path):
    out = proxied.cli(
        "sbatch", "-p", "debug", "--wrap", "echo through-nginx", cwd=tmp_path, env=proxied.proxy_env
    )
    job = int(out.stdout.split()[-1])

    def done():
        state = proxied.cli("scontrol", "show", "job", str(job), env=proxied.proxy_env).stdout
        return "JobState=COMPLETED" in state

    proxied.wait_for(f"job {job} COMPLETED", done)
    assert (tmp_path / f"slurm-{job}.out").read_text() == "through-nginx\n"


def test_a_websocket_to_ws_agent_upgrades_through_the_proxy(proxied):
    with connect(f"wss://127.0.0.1:{proxied.proxy_port}/ws/agent/", ssl=tls(proxied), open_timeout=10) as ws:
        assert ws.response.status_code == 101


def test_the_console_login_passes_csrf_from_the_trusted_origin_only(proxied):
    def login(origin: str) -> int:
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=tls(proxied)), urllib.request.HTTPCookieProcessor(jar)
        )
        page = opener.open(proxied.origin + "/admin/login/", timeout=10).read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        cookie = next(c for c in jar if c.name == "csrftoken")
        assert cookie.secure, "FSCHED_HTTPS=1: the CSRF cookie travels over TLS only"
        form = urllib.parse.urlencode(
            {"csrfmiddlewaretoken": token, "username": "web", "password": WEB_PASSWORD, "next": "/admin/"}
        ).encode()
        request = urllib.request.Request(  # noqa: S310 - https to loopback
            proxied.origin + "/admin/login/",
            data=form,
            headers={"Origin": origin, "Referer": proxied.origin + "/admin/login/"},
        )
        try:
            with opener.open(request, timeout=10) as response:
                # Redirected to /admin/ and logged in: the page names the user.
                assert "web" in response.read().decode()
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    assert login(proxied.origin) == 200
    assert login("https://elsewhere.example.org") == 403


def test_static_files_come_from_nginx_alias(proxied):
    with urllib.request.urlopen(  # noqa: S310 - loopback
        proxied.origin + "/static/nginx-probe.txt", context=tls(proxied), timeout=10
    ) as response:
        assert response.read() == b"served by nginx\n"
    # And the collected files themselves, as the console asks for them.
    css = next((proxied.state_dir / "static" / "admin" / "css").glob("*.css")).name
    with urllib.request.urlopen(  # noqa: S310 - loopback
        f"{proxied.origin}/static/admin/css/{css}", context=tls(proxied), timeout=10
    ) as response:
        assert response.headers["Content-Type"].startswith("text/css")
