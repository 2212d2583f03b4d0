"""Where a cycle's default interval comes from (cycles.defaults): pure, no database."""

from __future__ import annotations

from cycles.defaults import default_for, parameter_value

SCHED = "SchedulerParameters=sched_interval"


def _default(options: dict, environ: dict | None = None, **kw):
    return default_for(
        interval=kw.get("interval", 2.0),
        setting="FSCHED_SCHED_INTERVAL",
        slurm_parameter=kw.get("slurm_parameter", SCHED),
        options=options,
        environ=environ or {},
    )


def test_parameter_value_reads_one_item_of_a_list():
    options = {"SchedulerParameters": "bf_continue, sched_interval=15,bf_interval=40"}
    assert parameter_value(options, SCHED) == "15"
    assert parameter_value(options, "SchedulerParameters=bf_interval") == "40"
    assert parameter_value(options, "SchedulerParameters=bf_continue") is None  # a flag, no value
    assert parameter_value({}, SCHED) is None


def test_slurm_conf_wins_over_the_environment():
    found = _default({"SchedulerParameters": "sched_interval=15"}, {"FSCHED_SCHED_INTERVAL": "3"})
    assert (found.seconds, found.enabled, found.source, found.where) == (15.0, True, "slurm.conf", SCHED)


def test_the_environment_then_fsched_s_default():
    found = _default({}, {"FSCHED_SCHED_INTERVAL": "3"}, interval=3.0)
    assert (found.seconds, found.source, found.where) == (3.0, "environment", "FSCHED_SCHED_INTERVAL")
    found = _default({})
    assert (found.seconds, found.source, found.where) == (2.0, "default", "")


def test_minus_one_disables_the_periodic_loop_as_in_slurm():
    found = _default({"SchedulerParameters": "sched_interval=-1"})
    assert (found.enabled, found.source, found.seconds) == (False, "slurm.conf", 2.0)


def test_a_bad_slurm_conf_value_is_named_and_ignored():
    for raw in ("0", "abc", "-5"):
        found = _default({"SchedulerParameters": f"sched_interval={raw}"})
        assert (found.seconds, found.source) == (2.0, "default")
        assert found.warning == f"slurm.conf: {SCHED}={raw}: must be an integer >= 1 or -1; ignored"


def test_a_cycle_slurm_conf_does_not_set_ignores_it():
    found = _default({"SchedulerParameters": "sched_interval=15"}, slurm_parameter="")
    assert found.source == "default"
