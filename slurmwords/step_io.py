"""The stream between a step's tasks and srun (pure): frames and the key's proofs.

srun listens; each node's agent connects to it for that node's tasks. Both sides prove the
step's key (srun made it and sent it to the controller with the step request; the
controller passed it to the agents in the sealed ``step_launch``) without sending it, as
the agents' handshake does (HMAC-SHA256 over both nonces, domain-separated):

1. agent → srun  HELLO  {"job_id", "step_id", "node", "nonce": Na}
2. srun → agent  CHALLENGE {"nonce": Ns, "proof": HMAC(K, "fsched-srun"|Na|Ns|job.step|node)}
3. agent → srun  AUTH   {"proof": HMAC(K, "fsched-step-io"|Ns|Na|job.step|node)}

Then the agent sends OUT/ERR frames (a task's bytes, in the order it wrote them) and one
EXIT frame per task; srun sends IN frames, its own standard input for every task of the
node (an empty one is its end), as srun's default ``--input=all``, and under ``srun --pty``
WINCH frames, its terminal's new size (rows and columns, 2 bytes each), for task 0's
pseudo-terminal. A frame: kind (1 byte), task id (4 bytes), length (4 bytes), payload; all
big-endian.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import struct
from typing import Any

HELLO, CHALLENGE, AUTH, OUT, ERR, EXIT, IN, WINCH = 1, 2, 3, 4, 5, 6, 7, 8
KINDS = frozenset({HELLO, CHALLENGE, AUTH, OUT, ERR, EXIT, IN, WINCH})
HEADER = struct.Struct("!BII")
EXIT_BODY = struct.Struct("!ii")  # exit code, signal (0: none)
WINCH_BODY = struct.Struct("!HH")  # rows, columns
MAX_PAYLOAD = 1 << 16
NO_TASK = 0xFFFFFFFF


class FrameError(ValueError):
    """Bytes that are not a frame of this protocol: the connection is dropped."""


def new_key() -> str:
    return secrets.token_hex(32)


def new_nonce() -> str:
    return secrets.token_hex(32)


def _proof(key: str, domain: str, first: str, second: str, step: str, node: str) -> str:  # noqa: PLR0917
    text = "\0".join((domain, first, second, step, node)).encode()
    return hmac.new(bytes.fromhex(key), text, hashlib.sha256).hexdigest()


def srun_proof(key: str, agent_nonce: str, srun_nonce: str, step: str, node: str) -> str:
    return _proof(key, "fsched-srun", agent_nonce, srun_nonce, step, node)


def task_proof(key: str, srun_nonce: str, agent_nonce: str, step: str, node: str) -> str:
    return _proof(key, "fsched-step-io", srun_nonce, agent_nonce, step, node)


def proven(expected: str, given: object) -> bool:
    return isinstance(given, str) and hmac.compare_digest(expected, given)


def pack(kind: int, task: int, payload: bytes = b"") -> bytes:
    if len(payload) > MAX_PAYLOAD:
        raise FrameError(f"payload of {len(payload)} bytes is over {MAX_PAYLOAD}")
    return HEADER.pack(kind, task, len(payload)) + payload


def pack_json(kind: int, body: dict[str, Any]) -> bytes:
    return pack(kind, NO_TASK, json.dumps(body).encode())


def pack_exit(task: int, exit_code: int, signal: int) -> bytes:
    return pack(EXIT, task, EXIT_BODY.pack(exit_code, signal))


def unpack_exit(payload: bytes) -> tuple[int, int]:
    if len(payload) != EXIT_BODY.size:
        raise FrameError("an exit frame holds 8 bytes")
    return EXIT_BODY.unpack(payload)


def pack_winch(rows: int, cols: int) -> bytes:
    return pack(WINCH, NO_TASK, WINCH_BODY.pack(rows, cols))


def unpack_winch(payload: bytes) -> tuple[int, int]:
    if len(payload) != WINCH_BODY.size:
        raise FrameError("a window size frame holds 4 bytes")
    return WINCH_BODY.unpack(payload)


def unpack_json(payload: bytes) -> dict[str, Any]:
    try:
        body = json.loads(payload)
    except ValueError:
        raise FrameError("a handshake frame is not JSON") from None
    if not isinstance(body, dict):
        raise FrameError("a handshake frame is not a JSON object")
    return body


def chunks(data: bytes) -> list[bytes]:
    """``data`` cut to fit frames."""
    return [data[i : i + MAX_PAYLOAD] for i in range(0, len(data), MAX_PAYLOAD)] or [b""]


class FrameReader:
    """Frames out of a byte stream fed in pieces of any size."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, int, bytes]]:
        self._buf += data
        out: list[tuple[int, int, bytes]] = []
        while len(self._buf) >= HEADER.size:
            kind, task, size = HEADER.unpack_from(self._buf)
            if kind not in KINDS:
                raise FrameError(f"unknown frame kind {kind}")
            if size > MAX_PAYLOAD:
                raise FrameError(f"frame of {size} bytes is over {MAX_PAYLOAD}")
            if len(self._buf) < HEADER.size + size:
                break
            out.append((kind, task, bytes(self._buf[HEADER.size : HEADER.size + size])))
            del self._buf[: HEADER.size + size]
        return out

    @property
    def pending(self) -> int:
        return len(self._buf)
