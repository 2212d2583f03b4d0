"""Asking for a what-if (whatif.services.whatif_create): who may, what is checked before
anything is stored, and what is stored."""

from __future__ import annotations

import pytest
from auditlog.models import LogEntry

from cluster.services.errors import PermissionDenied, ServiceError
from whatif import services
from whatif.core.offer import offers
from whatif.models import WhatIf
from whatif.snapshot import texts

pytestmark = pytest.mark.django_db


@pytest.fixture
def keys(demo, users):
    return {o.label: o.key for o in offers(texts(services.base_files("current")))}


def ask(users, posted, **kw):
    kw.setdefault("workload", "upload")
    kw.setdefault("upload_name", "w.json")
    kw.setdefault("upload", b'{"jobs": [{"submit": 0, "user": "alice", "run_time": 60}]}')
    return services.whatif_create(actor=users["admin"], base="current", posted=posted, **kw)


def test_only_an_administrator_asks(keys, users):
    with pytest.raises(PermissionDenied):
        services.whatif_create(actor=users["alice"], base="current", posted={}, workload="sample")
    assert not WhatIf.objects.exists()


def test_a_comparison_is_stored_with_both_configurations_and_audited(keys, users):
    row = ask(users, {keys["SuspendTime"]: "120", keys["flat / top"]: "20"}, name="shorter-suspend")
    assert row.state == WhatIf.QUEUED
    assert row.changes == [["SuspendTime", "", "120"], ["flat / top", "24", "20"]]
    assert "SuspendTime=120" in row.files_b["slurm.conf"]["text"]
    assert "SuspendTime=120" not in row.files_a["slurm.conf"]["text"]
    assert row.files_a["power/resume"]["mode"] & 0o111  # programs stay executable
    entry = LogEntry.objects.get_for_object(row).get()
    assert entry.actor == users["admin"]
    assert entry.additional_data["action"] == "whatif"
    # B saved by name is offered as A later, with its files.
    assert services.base_files("shorter-suspend") == row.files_b


def test_a_value_the_controller_refuses_is_a_400_naming_file_and_line(keys, users):
    with pytest.raises(ServiceError) as info:
        ask(users, {keys["ResumeTimeout"]: "soon"})
    assert info.value.status == 400
    assert "slurm.conf:" in str(info.value) and "ResumeTimeout" in str(info.value)
    assert "/whatif/" not in str(info.value)  # the scratch directory's path is not shown
    assert not WhatIf.objects.exists()


def test_bad_counts_names_and_workloads_are_refused(keys, users):
    with pytest.raises(ServiceError, match="count must be a whole number"):
        ask(users, {keys["flat / top"]: "x"})
    with pytest.raises(ServiceError, match="name:"):
        ask(users, {}, name="two words")
    with pytest.raises(ServiceError, match="a file ending in"):
        ask(users, {}, upload_name="w.exe")
    with pytest.raises(ServiceError, match="no job ended in the last 7 days"):
        ask(users, {}, workload="history", days="7")
    with pytest.raises(ServiceError, match="base: no saved configuration"):
        services.whatif_create(actor=users["admin"], base="nope", posted={}, workload="sample")
    assert not WhatIf.objects.exists()


def test_two_running_is_the_most(keys, users):
    ask(users, {})
    ask(users, {})
    with pytest.raises(ServiceError, match="2 what-ifs are running"):
        ask(users, {})
