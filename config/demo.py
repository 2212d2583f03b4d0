"""``make run``: set up and start a whole cluster on this machine, in the foreground.

Migrates, loads the configuration, creates the keys and the administrator (printing the
password once) and logs the CLI in (``manage.py fsched_bootstrap``), then starts the
controller and one node agent hosting every node of the configuration that is not CLOUD
or FUTURE.  Ctrl-C or SIGTERM stops everything it started.  The end-to-end tests start
their clusters with the same ``Cluster`` class.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from cluster.core.state_files import read_key
from config.env import envint
from config.supervise import Supervised

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def agent_nodes(conf_dir: Path) -> str:
    from ClusterShell.NodeSet import NodeSet  # noqa: PLC0415

    from cluster.core.slurmconf import load_slurm_conf  # noqa: PLC0415

    conf = load_slurm_conf(conf_dir / "slurm.conf")
    names = [n.name for n in conf.nodes if n.state not in ("CLOUD", "FUTURE")]
    return str(NodeSet.fromlist(names))


class Cluster:
    """A controller process and an agent process sharing one state directory."""

    def __init__(
        self,
        *,
        state_dir: Path,
        conf_dir: Path,
        port: int,
        env: dict[str, str] | None = None,
        server_args: tuple[str, ...] = (),
        quiet: bool = False,
    ) -> None:
        self.state_dir = state_dir
        self.conf_dir = conf_dir
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.server_args = server_args
        self.quiet = quiet
        self.env = {**os.environ, **(env or {})}
        self.env["FSCHED_STATE_DIR"] = str(state_dir)
        self.env["FSCHED_CONF_DIR"] = str(conf_dir)
        self.env["FSCHED_PORT"] = str(port)
        self.env["FSCHED_URL"] = self.url
        self.server: subprocess.Popen[bytes] | None = None
        self.agent: subprocess.Popen[bytes] | None = None

    def manage(self, *args: str) -> str:
        out = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        return out.stdout

    def setup(self, *, username: str | None = None) -> str:
        self.manage("migrate", "--no-input", "-v", "0")
        args = ["fsched_bootstrap", "--url", self.url]
        if username:
            args += ["--username", username]
        out = self.manage(*args)
        # The agent this starts (and those the demo's power programs start) reads the key
        # from its environment; the bootstrap has just created it, unless that gave one.
        self.env.setdefault("FSCHED_AGENT_KEY", read_key(self.state_dir / "agent_key"))
        return out

    def _out(self, name: str):
        if not self.quiet:
            return None
        return open(self.state_dir / f"{name}.log", "ab")

    def start_server(self) -> None:
        self.spawn_server()
        self.wait_http()

    def spawn_server(self) -> subprocess.Popen[bytes]:
        """Start the controller without waiting for it to answer (a restart under
        supervision: the loop must stay free to notice Ctrl-C)."""
        self.server = subprocess.Popen(
            [str(VENV_BIN / "fsched"), "server", "--port", str(self.port), *self.server_args],
            env=self.env,
            cwd=ROOT,
            stdout=self._out("server"),
            stderr=subprocess.STDOUT if self.quiet else None,
        )
        return self.server

    def start_agent(self, nodes: str | None = None, *extra: str) -> subprocess.Popen[bytes]:
        nodes = nodes or agent_nodes(self.conf_dir)
        self.agent = subprocess.Popen(
            [
                str(VENV_BIN / "fsched"),
                "agent",
                "--nodes",
                nodes,
                "--controller",
                f"ws://127.0.0.1:{self.port}",
                "--spool",
                str(self.state_dir / "agent"),
                *extra,
            ],
            env=self.env,
            cwd=ROOT,
            stdout=self._out("agent"),
            stderr=subprocess.STDOUT if self.quiet else None,
        )
        return self.agent

    def wait_http(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.server is not None and self.server.poll() is not None:
                raise RuntimeError(f"the controller exited with status {self.server.returncode}")
            try:
                # The login page answers anyone: asking a page that needs a login would log
                # an "Unauthorized" warning at every start.
                urllib.request.urlopen(self.url + "/admin/login/", timeout=1)  # noqa: S310 - loopback
                return
            except urllib.error.HTTPError:
                return  # it answers: it is up
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the controller did not answer on {self.url} within {timeout} s")

    @staticmethod
    def _stop(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def stop(self) -> None:
        self._stop(self.agent)
        self._stop(self.server)
        self.stop_power_agents()

    def stop_power_agents(self) -> None:
        """The agents the demo's ResumeProgram started (examples/demo/power) outlive the
        controller, as power programs' work should; stop them with the rest of the demo."""
        for pidfile in (self.state_dir / "power").glob("*.pid"):
            try:
                pid = int(pidfile.read_text().strip())
                if "agent" in Path(f"/proc/{pid}/cmdline").read_text():
                    os.kill(pid, signal.SIGTERM)
            except (OSError, ValueError):
                pass
            pidfile.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make run")
    parser.parse_args(argv)
    state_dir = Path(os.environ.get("FSCHED_STATE_DIR", ROOT / "var")).resolve()
    conf_dir = Path(os.environ.get("FSCHED_CONF_DIR", ROOT / "examples" / "demo")).resolve()
    port = envint("FSCHED_PORT", 8000)
    cluster = Cluster(state_dir=state_dir, conf_dir=conf_dir, port=port)
    print(cluster.setup().rstrip())
    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        cluster.start_server()
        now = time.monotonic()
        processes = [
            Supervised("controller", cluster.spawn_server, now=now, say=say, running=cluster.server),
            Supervised("agent", cluster.start_agent, now=now, say=say),
        ]
        print(f"fsched is running: console {cluster.url}/  (Ctrl-C stops it)", flush=True)
        print(f"try: {VENV_BIN / 'fsched'} sinfo; {VENV_BIN / 'fsched'} sbatch --wrap='hostname'", flush=True)
        while not stopping:
            for process in processes:
                if reason := process.poll(time.monotonic()):
                    say(reason)
                    stopping = True
            time.sleep(0.2)
    finally:
        cluster.stop()
    return 0


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} make run: {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
