"""One API job as Slurm 23.11's JOB_INFO (cli/squeue_json.py): the values the encoders
derive from fsched's words (sharing, mail types, states with flags)."""

from __future__ import annotations

import pytest

from cli import squeue_json


@pytest.mark.parametrize(
    ("words", "printed"),
    [
        (("NO", "OK"), ([], [], True)),  # asked neither: NO_VAL16, a true BOOL16
        (("NO", "YES"), (["oversubscribe"], ["false"], True)),  # JOB_SHARED_OK
        (("NODE", "NO"), (["none"], ["true"], False)),  # --exclusive: JOB_SHARED_NONE
        (("USER", "USER"), (["user"], ["user"], True)),
        (("MCS", "MCS"), (["mcs"], ["mcs"], True)),
    ],
)
def test_sharing_as_job_shared_and_job_exclusive(objs, words, printed):
    exclusive, oversubscribe = words
    job = squeue_json.job(objs.job(exclusive=exclusive, oversubscribe=oversubscribe))
    assert (job["shared"], job["exclusive"], job["oversubscribe"]) == printed


def test_mail_types_in_job_mail_flags_words_and_order(objs):
    job = squeue_json.job(objs.job(mail_type="INVALID_DEPEND,BEGIN,END,TIME_LIMIT_90", mail_user="ann@x"))
    assert job["mail_type"] == ["BEGIN", "END", "TIME=90%", "INVALID_DEPENDENCY"]
    assert job["mail_user"] == "ann@x"


@pytest.mark.parametrize(
    ("state", "final", "flags"),
    [
        ("RUNNING", "", ["RUNNING"]),
        ("CONFIGURING", "", ["RUNNING", "CONFIGURING"]),
        ("STOPPED", "", ["RUNNING", "STOPPED"]),
        ("COMPLETING", "TIMEOUT", ["TIMEOUT", "COMPLETING"]),
        ("COMPLETING", "REQUEUED", ["PENDING", "REQUEUED", "COMPLETING"]),
        ("OUT_OF_MEMORY", "", ["OUT_OF_MEMORY"]),
    ],
)
def test_job_state_is_a_base_state_and_its_flags(objs, state, final, flags):
    assert squeue_json.job(objs.job(state=state, final_state=final))["job_state"] == flags


def test_an_unlimited_time_limit_and_a_memory_per_cpu(objs):
    job = squeue_json.job(objs.job(time_limit=None, mem_per_cpu=500, mem_per_node=None))
    assert job["time_limit"] == {"set": False, "infinite": True, "number": 0}
    assert job["memory_per_cpu"] == {"set": True, "infinite": False, "number": 500}
    assert job["memory_per_node"] == {"set": False, "infinite": False, "number": 0}
