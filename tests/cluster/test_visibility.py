"""The one visibility rule (cluster/visibility.py, #15 point 1): the owner, an account
coordinator's subtree, staff and Operators, and slurm.conf's PrivateData words."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from cluster import visibility
from cluster.core.private_data import parse_private_data
from cluster.models import ClusterConfig, Job
from cluster.services.configuration import config_load
from cluster.services.errors import PermissionDenied, ServiceError
from limits.coordinators import coordinator_add, coordinator_delete
from limits.services import record_add, record_modify

pytestmark = pytest.mark.django_db


def private(text: str) -> None:
    cfg = ClusterConfig.for_update()
    cfg.options = {**cfg.options, "PrivateData": text}
    cfg.save()


def fresh(name: str):
    """The user as a new request reads it (the viewer is kept per user object)."""
    return get_user_model().objects.get(username=name)


def job(job_id: int, user: str, account: str) -> Job:
    return Job.objects.create(
        id=job_id,
        user=user,
        account=account,
        partition="debug",
        submit_time=timezone.now(),
        script="#!/bin/sh\n",
    )


@pytest.fixture
def tree(demo, users):
    """science > physics, and chem beside it; bob coordinates science; carol is an Operator."""
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="account", names=["physics"], options=["Parent=science"])
    record_add(actor=admin, entity="account", names=["chem"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=physics"])
    record_add(actor=admin, entity="user", names=["bob"], options=["Account=chem"])
    record_add(actor=admin, entity="user", names=["carol"], options=["Account=chem", "AdminLevel=Operator"])
    get_user_model().objects.create_user("carol", password="carol-pw")
    change = coordinator_add(actor=admin, names=["bob"], options=["account=science"])
    assert change.lines == [
        " Adding Coordinator User(s)",
        "  bob",
        " To Account(s) and all sub-accounts",
        "  science",
    ]
    job(1, "alice", "physics")
    job(2, "alice", "chem")
    job(3, "dave", "science")
    job(4, "bob", "chem")
    return users


def ids(q) -> list[int]:
    return sorted(Job.objects.filter(q).values_list("id", flat=True))


def test_without_private_data_everyone_sees_every_job_but_acts_on_their_own(tree):
    assert ids(visibility.visible_jobs(fresh("alice"))) == [1, 2, 3, 4]
    assert ids(visibility.manageable_jobs(fresh("alice"))) == [1, 2]
    assert not visibility.may_manage(fresh("alice"), Job.objects.get(pk=4))


def test_a_coordinator_manages_the_jobs_of_the_account_and_its_subtree_only(tree):
    bob = fresh("bob")
    # science and physics beneath it, and bob's own job; not alice's job in chem.
    assert ids(visibility.manageable_jobs(bob)) == [1, 3, 4]
    assert visibility.may_manage(bob, Job.objects.get(pk=1))
    assert not visibility.may_manage(bob, Job.objects.get(pk=2))


def test_staff_and_operators_see_and_manage_everything(tree):
    private("jobs")
    for name in ("admin", "carol"):
        assert ids(visibility.visible_jobs(fresh(name))) == [1, 2, 3, 4]
        assert ids(visibility.manageable_jobs(fresh(name))) == [1, 2, 3, 4]


def test_private_data_jobs_hides_other_users_jobs_except_from_coordinators(tree):
    private("jobs")
    assert ids(visibility.visible_jobs(fresh("alice"))) == [1, 2]
    assert ids(visibility.visible_jobs(fresh("bob"))) == [1, 3, 4]
    assert not visibility.may_see(fresh("alice"), Job.objects.get(pk=4))
    assert visibility.may_see(fresh("bob"), Job.objects.get(pk=1))


def test_a_removed_coordinator_manages_only_their_own_jobs_again(tree):
    change = coordinator_delete(actor=tree["admin"], where=["name=bob", "account=science"])
    assert change.count == 1
    assert ids(visibility.manageable_jobs(fresh("bob"))) == [4]


def test_coordinator_errors_change_nothing(tree):
    with pytest.raises(ServiceError, match=r"You need to specify a user list and account list here\."):
        coordinator_add(actor=tree["admin"], names=["bob"], options=[])
    with pytest.raises(ServiceError, match=r"User\(s\) nobody do not exist"):
        coordinator_add(actor=tree["admin"], names=["nobody"], options=["account=science"])
    with pytest.raises(PermissionDenied):
        coordinator_add(actor=tree["alice"], names=["alice"], options=["account=science"])
    with pytest.raises(ServiceError, match="Nothing new added"):
        coordinator_add(actor=tree["admin"], names=["bob"], options=["account=science"])
    assert ids(visibility.manageable_jobs(fresh("alice"))) == [1, 2]


@pytest.mark.parametrize(
    ("words", "hidden"),
    [
        ("", set()),
        ("jobs", {"jobs"}),
        ("usage,accounts", {"usage", "accounts"}),
        ("Nodes,RESERVATIONS", {"nodes", "reservations"}),
        ("all", {"jobs", "usage", "accounts", "nodes", "reservations", "users"}),
    ],
)
def test_private_data_words_hide_each_kind_from_regular_users_only(tree, words, hidden):
    private(words)
    kinds = ("jobs", "usage", "accounts", "nodes", "reservations", "users")
    assert {k for k in kinds if visibility.hides(fresh("alice"), k)} == hidden
    assert not any(visibility.hides(fresh("admin"), k) for k in kinds)
    assert not any(visibility.hides(fresh("carol"), k) for k in kinds)


def test_private_data_reservations_shows_the_reservations_a_user_may_use(tree):
    private("reservations")
    alice = fresh("alice")
    assert visibility.may_see_reservation(alice, "alice,bob", "")
    assert visibility.may_see_reservation(alice, "", "physics")
    assert not visibility.may_see_reservation(alice, "bob", "chem")
    assert visibility.may_see_reservation(fresh("admin"), "bob", "")


def test_an_unknown_private_data_word_is_refused_at_load(conf_dir, settings):
    settings.CONF_DIR = conf_dir
    path = conf_dir / "slurm.conf"
    path.write_text(path.read_text() + "PrivateData=jobs,secrets\n")
    with pytest.raises(
        ServiceError, match=r"slurm\.conf:\d+: PrivateData=jobs,secrets: invalid PrivateData word 'secrets'"
    ):
        config_load(path=path)
    assert parse_private_data("jobs, usage") == {"jobs", "usage"}


def test_an_operator_level_set_later_is_seen_by_the_next_request(tree):
    private("jobs")
    assert ids(visibility.visible_jobs(fresh("alice"))) == [1, 2]
    record_modify(actor=tree["admin"], entity="user", where=["name=alice"], options=["AdminLevel=Operator"])
    assert ids(visibility.visible_jobs(fresh("alice"))) == [1, 2, 3, 4]


def test_an_operator_has_the_operator_rights_of_the_job_services(tree):
    """One rule decides who is an operator: AdminLevel=Operator gives a negative nice and an
    administrator's hold, as staff has them (cluster.visibility.privileged)."""
    from cluster.services.jobs import job_hold, job_release, job_update

    carol, alice = fresh("carol"), fresh("alice")
    assert visibility.privileged(carol) and not visibility.privileged(alice)
    assert job_update(actor=carol, job_id=1, changes={"nice": -5}).nice == -5
    with pytest.raises(PermissionDenied):
        job_update(actor=alice, job_id=1, changes={"nice": -6})
    assert job_hold(actor=carol, job_id=1).hold == "admin"
    with pytest.raises(PermissionDenied):
        job_release(actor=alice, job_id=1)
