"""slurm.conf's SchedulerParameters that size the passes: default_queue_depth,
sched_max_job_start, bf_max_job_test, bf_max_job_start and bf_window, checked when
slurm.conf is read and honoured by the live pass."""

from __future__ import annotations

import pytest

from cluster.core.sched_params import SchedParams, parse_scheduler_parameters
from cluster.models import Job
from cluster.services import agents, scheduler_params
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass

NODES = [f"node{i:02d}" for i in range(1, 33)]


def test_defaults_are_slurms():
    assert parse_scheduler_parameters(None) == SchedParams()
    assert parse_scheduler_parameters("") == SchedParams(None, 0, 500, 0, 1440)


def test_items_are_read_among_others_and_case_blind():
    params = parse_scheduler_parameters(
        "bf_continue,sched_interval=30,Default_Queue_Depth=20,sched_max_job_start=5,"
        "bf_max_job_test=1000,bf_max_job_start=50,bf_window=2880,max_script_size=1000"
    )
    assert params == SchedParams(20, 5, 1000, 50, 2880)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bf_max_job_test=lots", "bf_max_job_test=lots: not a whole number"),
        ("bf_max_job_test", "bf_max_job_test: not a whole number"),
        ("bf_max_job_test=0", "bf_max_job_test=0: must be at least 1"),
        ("bf_window=0", "bf_window=0: must be from 1 to 43200"),
        ("bf_window=43201", "bf_window=43201: must be from 1 to 43200"),
        ("bf_max_job_start=10001", "bf_max_job_start=10001: must be from 0 to 10000"),
        ("sched_max_job_start=-1", "sched_max_job_start=-1: must be at least 0"),
        ("default_queue_depth=0", "default_queue_depth=0: must be at least 1"),
    ],
)
def test_a_bad_value_is_named(text, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        parse_scheduler_parameters(text)


def _with(conf_dir, settings, line: str):
    settings.CONF_DIR = conf_dir
    path = conf_dir / "slurm.conf"
    path.write_text(path.read_text() + line + "\n")
    return path


def test_a_bad_value_stops_the_configuration_at_its_line(conf_dir, db, settings):
    path = _with(conf_dir, settings, "SchedulerParameters=bf_interval=30,bf_window=0")
    line = len(path.read_text().splitlines())
    with pytest.raises(ServiceError, match=rf"slurm.conf:{line}: SchedulerParameters=.*bf_window=0: must be"):
        config_load(path=path)


def _queue(user, count: int) -> list[int]:
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
    )
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "batch"}
    return [job_submit(user=user, spec=spec).job_ids[0] for _ in range(count)]


def _states(ids: list[int]) -> list[tuple[str, str]]:
    return list(Job.objects.filter(pk__in=ids).order_by("id").values_list("state", "reason"))


def test_sched_max_job_start_bounds_the_main_loop_and_bf_max_job_start_backfill(
    demo, users, conf_dir, settings
):
    line = "SchedulerParameters=sched_max_job_start=2,bf_max_job_start=1"
    config_load(path=_with(conf_dir, settings, line))
    ids = _queue(users["alice"], 4)
    schedule_pass(backfill=False)
    assert _states(ids) == [("RUNNING", "None")] * 2 + [("PENDING", "Priority")] * 2
    schedule_pass(backfill=True)  # main loop: 2 more would fit, 2 started; backfill: none left
    assert [s for s, _ in _states(ids)] == ["RUNNING"] * 4
    more = _queue(users["alice"], 4)
    schedule_pass(backfill=True)  # main loop 2, backfill 1
    assert [s for s, _ in _states(more)] == ["RUNNING"] * 3 + ["PENDING"]


def test_default_queue_depth_sizes_the_event_pass(demo, users, conf_dir, settings):
    settings.FSCHED_QUEUE_DEPTH = 100
    assert scheduler_params.event_queue_depth() == 100
    config_load(path=_with(conf_dir, settings, "SchedulerParameters=default_queue_depth=3"))
    assert scheduler_params.event_queue_depth() == 3
    ids = _queue(users["alice"], 5)
    schedule_pass(backfill=False, queue_depth=scheduler_params.event_queue_depth())
    assert [s for s, _ in _states(ids)] == ["RUNNING"] * 3 + ["PENDING"] * 2


def test_bf_window_and_bf_max_job_test_reach_the_core(demo, conf_dir, settings):
    config_load(path=_with(conf_dir, settings, "SchedulerParameters=bf_window=60,bf_max_job_test=7"))
    config = scheduler_params.pass_config(backfill=True)
    assert (config.bf_window, config.bf_max_job_test, config.max_starts_per_pass) == (60, 7, None)
