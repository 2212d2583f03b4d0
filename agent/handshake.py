"""Mutual proof of the cluster key between an agent and the controller (docs/agent-protocol.md).

Pure (stdlib only): the agent and the controller's consumer both use it. Neither side ever
sends the key. Each proves it holds it with an HMAC over both sides' fresh nonces, the
controller first, so an agent reveals nothing, not even a proof, to a peer that cannot
prove the key. The proofs are domain-separated ("fsched-controller" / "fsched-agent"):
one side's proof can never be replayed as the other's.

Proving the key is not enough on its own: a fake controller could relay the handshake to
the real one and then inject its own messages. So every message after the handshake
carries an HMAC under a session key derived from both nonces, with a per-direction
sequence number, and a relay can only pass messages on unchanged, in order.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

NONCE_BYTES = 32
MAC_CHARS = 64  # hex SHA-256
AGENT_TO_CONTROLLER = "agent"
CONTROLLER_TO_AGENT = "controller"


class BadFrame(ValueError):
    """A sealed message whose MAC does not verify (tampered, replayed, reordered or forged)."""


def new_nonce() -> str:
    return secrets.token_hex(NONCE_BYTES)


def valid_nonce(value: object) -> bool:
    """A nonce as ``new_nonce`` makes them: 64 lowercase hex digits."""
    return (
        isinstance(value, str)
        and len(value) == 2 * NONCE_BYTES
        and all(c in "0123456789abcdef" for c in value)
    )


def _mac(key: bytes, *parts: str) -> str:
    # NUL cannot occur in a nonce or an agent id sent as JSON text we accept, so the
    # joined message is unambiguous.
    return hmac.new(key, "\0".join(parts).encode(), hashlib.sha256).hexdigest()


def controller_proof(key: bytes, agent_nonce: str, controller_nonce: str, agent_id: str) -> str:
    return _mac(key, "fsched-controller", agent_nonce, controller_nonce, agent_id)


def agent_proof(key: bytes, agent_nonce: str, controller_nonce: str, agent_id: str) -> str:
    return _mac(key, "fsched-agent", controller_nonce, agent_nonce, agent_id)


def proof_matches(expected: str, received: object) -> bool:
    return isinstance(received, str) and hmac.compare_digest(expected.encode(), received.encode())


def session_key(key: bytes, agent_nonce: str, controller_nonce: str, agent_id: str) -> bytes:
    return bytes.fromhex(_mac(key, "fsched-session", agent_nonce, controller_nonce, agent_id))


class Channel:
    """Seals outgoing and opens incoming messages of one authenticated connection.

    ``side`` is who we are (AGENT_TO_CONTROLLER for the agent). The sequence numbers are
    implicit: both ends count, so nothing can be dropped, replayed or reordered unseen.
    """

    def __init__(self, key: bytes, *, sending: str, receiving: str) -> None:
        self._key = key
        self._sending = sending
        self._receiving = receiving
        self._sent = 0
        self._received = 0

    @classmethod
    def for_agent(cls, key: bytes) -> Channel:
        return cls(key, sending=AGENT_TO_CONTROLLER, receiving=CONTROLLER_TO_AGENT)

    @classmethod
    def for_controller(cls, key: bytes) -> Channel:
        return cls(key, sending=CONTROLLER_TO_AGENT, receiving=AGENT_TO_CONTROLLER)

    @property
    def sent(self) -> int:
        """Frames sealed so far: the number of the latest."""
        return self._sent

    @property
    def received(self) -> int:
        """Frames opened so far: the number of the latest."""
        return self._received

    def seal(self, text: str) -> str:
        """``<64 hex MAC><text>``: the MAC covers direction, sequence number and text."""
        self._sent += 1
        return _frame_mac(self._key, self._sending, self._sent, text) + text

    def open(self, frame: str) -> str:
        mac, text = frame[:MAC_CHARS], frame[MAC_CHARS:]
        expected = _frame_mac(self._key, self._receiving, self._received + 1, text)
        if not hmac.compare_digest(expected.encode(), mac.encode("utf-8", "replace")):
            raise BadFrame("message authentication failed")
        self._received += 1
        return text


def _frame_mac(key: bytes, direction: str, seq: int, text: str) -> str:
    msg = f"{direction}\0{seq}\0".encode() + text.encode("utf-8", "surrogatepass")
    return hmac.new(key, msg, hashlib.sha256).hexdigest()
