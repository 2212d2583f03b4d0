"""Where a step's tasks go (slurmwords/step_layout.py, steps/core/layout.py): Slurm's block
distribution, its SLURM_* counts, and steps exclusive within the job's CPUs."""

from __future__ import annotations

import pytest

from slurmwords import step_layout
from steps.core import layout


def test_block_distribution_counts_as_a_cyclic_pass_then_numbers_in_blocks() -> None:
    assert step_layout.block_counts(4, [4, 4]) == [2, 2]  # -n4 over two 4-CPU nodes
    assert step_layout.task_ids([2, 2]) == [[0, 1], [2, 3]]
    assert step_layout.block_counts(5, [4, 1]) == [4, 1]  # a small node fills first
    assert step_layout.block_counts(3, [4, 4]) == [2, 1]
    assert step_layout.block_counts(6, [2, 2]) == [3, 3]  # past every slot: spread the same way
    with pytest.raises(step_layout.LayoutError):
        step_layout.block_counts(1, [4, 4])


def test_tasks_per_node_and_task_ranges_fold_as_slurm_prints_them() -> None:
    assert step_layout.compress_counts([2, 2, 2, 1]) == "2(x3),1"
    assert step_layout.compress_counts([4]) == "4"
    assert step_layout.task_range([0, 1, 2, 3, 7]) == "0-3,7"


def test_a_task_s_environment_names_its_step_task_and_node() -> None:
    env = step_layout.step_task_env(
        job_id=12, step_id=3, task=5, local=1, node_index=2, node="node03", ntasks=6,
        node_list="node[01-03]", num_nodes=3, tasks_per_node="2(x3)", cpus_per_task=2,
    )  # fmt: skip
    assert env["SLURM_STEP_ID"] == env["SLURM_STEPID"] == "3"
    assert (env["SLURM_PROCID"], env["SLURM_LOCALID"], env["SLURM_NODEID"]) == ("5", "1", "2")
    assert env["SLURM_NTASKS"] == env["SLURM_NPROCS"] == env["SLURM_STEP_NUM_TASKS"] == "6"
    assert env["SLURM_STEP_NODELIST"] == env["SLURM_NODELIST"] == "node[01-03]"
    assert env["SLURM_STEP_NUM_NODES"] == env["SLURM_NNODES"] == "3"
    assert env["SLURM_STEP_TASKS_PER_NODE"] == env["SLURM_TASKS_PER_NODE"] == "2(x3)"
    assert (env["SLURMD_NODENAME"], env["SLURM_JOB_ID"], env["SLURM_CPUS_PER_TASK"]) == ("node03", "12", "2")


def test_labels_line_up_from_eleven_tasks() -> None:
    assert step_layout.label_width(10) == 1
    assert step_layout.label_width(11) == 2
    assert step_layout.label(3, 2) == b" 3: "


JOB = ["n1", "n2"]
CPUS = {"n1": 4, "n2": 4}


def req(**kw) -> layout.Request:
    return layout.Request(**{"ntasks": None, "nodes": None, "ntasks_per_node": None, "cpus_per_task": 1,
                             "overlap": False, **kw})  # fmt: skip


def test_a_step_takes_the_first_free_cpus_of_each_node() -> None:
    got = layout.plan(req(ntasks=4), JOB, CPUS, {})
    assert (got.nodes, got.tasks, got.cpus, got.tasks_per_node) == (
        JOB,
        [[0, 1], [2, 3]],
        [[0, 1], [0, 1]],
        "2(x2)",
    )
    second = layout.plan(req(ntasks=2, nodes=1), JOB, CPUS, {"n1": {0, 1}})
    assert (second.nodes, second.cpus) == (["n1"], [[2, 3]])


def test_steps_are_exclusive_unless_they_overlap() -> None:
    held = {"n1": {0, 1, 2, 3}, "n2": {0, 1, 2, 3}}
    with pytest.raises(layout.StepBusy):
        layout.plan(req(ntasks=1), JOB, CPUS, held)
    shared = layout.plan(req(ntasks=2, overlap=True), JOB, CPUS, held)
    assert shared.cpus == [[0], [0]]
    # Busy on the first node: the step goes to the second.
    assert layout.plan(req(ntasks=1), JOB, CPUS, {"n1": {0, 1, 2, 3}}).nodes == ["n2"]


def test_a_step_the_job_could_never_hold_is_refused_with_slurm_s_words() -> None:
    with pytest.raises(layout.StepRefused, match="More processors requested than permitted"):
        layout.plan(req(ntasks=9), JOB, CPUS, {})
    with pytest.raises(layout.StepRefused, match="More processors requested than permitted"):
        layout.plan(req(ntasks=2, cpus_per_task=3, nodes=1), JOB, CPUS, {})
    with pytest.raises(layout.StepRefused, match="Requested node configuration is not available"):
        layout.plan(req(ntasks=3, nodes=3), JOB, CPUS, {})
    with pytest.raises(layout.StepRefused, match="exceeds task count"):
        layout.plan(req(ntasks=1, nodes=2), JOB, CPUS, {})


def test_ntasks_per_node_caps_and_counts_the_tasks() -> None:
    got = layout.plan(req(ntasks_per_node=1), JOB, CPUS, {})
    assert (got.ntasks, got.tasks) == (2, [[0], [1]])
    with pytest.raises(layout.StepRefused):
        layout.plan(req(ntasks=4, ntasks_per_node=1), JOB, CPUS, {})


def test_the_interactive_step_is_one_task_on_the_first_node_with_its_cpus_even_when_all_are_held() -> None:
    held = {"n1": {0, 1, 2, 3}, "n2": {0, 1, 2, 3}}
    got = layout.plan(req(ntasks=8, nodes=2, interactive=True, overlap=True), JOB, CPUS, held)
    assert (got.nodes, got.tasks, got.cpus, got.ntasks, got.tasks_per_node) == (
        ["n1"], [[0]], [[0, 1, 2, 3]], 1, "1"
    )  # fmt: skip


def test_srun_preserve_env_keeps_srun_s_counts_and_gives_the_step_s_under_step_names() -> None:
    srun_env = {"SLURM_NNODES": "4", "SLURM_NTASKS": "16", "SLURM_TASKS_PER_NODE": "4(x4)"}
    env = step_layout.step_task_env(
        job_id=12, step_id=3, task=0, local=0, node_index=0, node="node01", ntasks=1,
        node_list="node01", num_nodes=1, tasks_per_node="1", cpus_per_task=None, preserve=srun_env,
    )  # fmt: skip
    assert (env["SLURM_NNODES"], env["SLURM_NTASKS"], env["SLURM_TASKS_PER_NODE"]) == ("4", "16", "4(x4)")
    assert "SLURM_NPROCS" not in env  # srun had none: the task keeps whatever the job's was
    assert (env["SLURM_STEP_NUM_NODES"], env["SLURM_STEP_NUM_TASKS"], env["SLURM_STEP_TASKS_PER_NODE"]) == (
        "1", "1", "1"
    )  # fmt: skip
