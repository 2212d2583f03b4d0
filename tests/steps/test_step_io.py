"""The stream between a step's tasks and srun (slurmwords/step_io.py): frames cut anywhere
reassemble, a stranger's bytes are refused, and both sides prove the key without sending it."""

from __future__ import annotations

import pytest

from slurmwords import step_io


def test_frames_reassemble_from_pieces_of_any_size() -> None:
    stream = (
        step_io.pack(step_io.OUT, 3, b"hello\n")
        + step_io.pack(step_io.ERR, 3, b"")
        + step_io.pack_exit(3, 4, 0)
    )
    reader = step_io.FrameReader()
    got = []
    for i in range(len(stream)):  # one byte at a time
        got += reader.feed(stream[i : i + 1])
    assert got == [
        (step_io.OUT, 3, b"hello\n"),
        (step_io.ERR, 3, b""),
        (step_io.EXIT, 3, step_io.EXIT_BODY.pack(4, 0)),
    ]
    assert step_io.unpack_exit(got[2][2]) == (4, 0)
    assert reader.pending == 0


def test_unknown_kinds_and_oversized_frames_are_refused() -> None:
    with pytest.raises(step_io.FrameError, match="unknown frame kind"):
        step_io.FrameReader().feed(step_io.HEADER.pack(99, 0, 0))
    with pytest.raises(step_io.FrameError, match="over"):
        step_io.FrameReader().feed(step_io.HEADER.pack(step_io.OUT, 0, step_io.MAX_PAYLOAD + 1))
    with pytest.raises(step_io.FrameError):
        step_io.pack(step_io.OUT, 0, b"x" * (step_io.MAX_PAYLOAD + 1))
    assert [len(c) for c in step_io.chunks(b"x" * (step_io.MAX_PAYLOAD + 5))] == [step_io.MAX_PAYLOAD, 5]


def test_the_proofs_depend_on_the_key_both_nonces_the_step_and_the_node() -> None:
    key, other = step_io.new_key(), step_io.new_key()
    na, ns = step_io.new_nonce(), step_io.new_nonce()
    proof = step_io.task_proof(key, ns, na, "5.0", "node01")
    assert len(key) == 64 and key not in proof
    assert step_io.proven(proof, step_io.task_proof(key, ns, na, "5.0", "node01"))
    for wrong in (
        step_io.task_proof(other, ns, na, "5.0", "node01"),
        step_io.task_proof(key, na, ns, "5.0", "node01"),
        step_io.task_proof(key, ns, na, "5.1", "node01"),
        step_io.task_proof(key, ns, na, "5.0", "node02"),
        step_io.srun_proof(key, ns, na, "5.0", "node01"),  # srun's proof is not the agent's
    ):
        assert not step_io.proven(proof, wrong)
    assert not step_io.proven(proof, None)
