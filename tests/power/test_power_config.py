"""power.core.config: power keys from slurm.conf, enabling rules, errors with file:line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.core.slurmconf import ConfigError, parse_slurm_conf_text
from power.core.config import (
    INFINITE,
    Exclusions,
    ExcNodeSet,
    Invocation,
    auto_enabled_at_load,
    cycle_due,
    exclusions_after_reconfigure,
    executable_check,
    node_suspend_time_change,
    parse_exc_nodes,
    parse_exc_states,
    power_config,
    registration_memory_ok,
)

HEAD = "ClusterName=test\nSlurmctldHost=ctl\n"  # lines 1 and 2
NODES = "NodeName=n[1-8] CPUs=4\nPartitionName=batch Nodes=n[1-8] Default=YES\n"
PROGS = "SuspendProgram=/usr/sbin/slurm_suspend\nResumeProgram=/usr/sbin/slurm_resume\n"


def parse(body: str):
    return power_config(parse_slurm_conf_text(HEAD + textwrap.dedent(body)))


def errors(body: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse(body)
    return [str(p) for p in info.value.problems]


# --- reading ---------------------------------------------------------------------------


def test_full_configuration_is_read_without_slurmconf_warnings() -> None:
    text = HEAD + textwrap.dedent(
        """\
        PowerAction=cloud_resume Location=slurmctld Program="/usr/sbin/slurm_resume --cloud"
        PowerAction=node_suspend Location=slurmd Program="/usr/sbin/shutdown -h now"
        ResumeProgram=cloud_resume
        SuspendProgram=node_suspend
        ResumeFailProgram=/usr/sbin/resume_fail
        SuspendTime=600
        SuspendTimeout=45
        ResumeTimeout=120
        ResumeRate=10
        SuspendRate=0
        SuspendExcNodes=n[1-4]:2,n8
        SuspendExcParts=debug
        SuspendExcStates=down,Drain
        ReconfigFlags=KeepPartState,KeepPowerSaveSettings
        SlurmctldParameters=enable_configless,power_save_interval=5,power_save_min_interval=1,idle_on_node_suspend,fast_power_up_launch,node_reg_mem_percent=80,cloud_dns
        DebugFlags=Backfill,Power
        NodeName=n[1-8] CPUs=4 Weight=2
        NodeName=c[1-4] CPUs=4 State=CLOUD SuspendTime=30
        PartitionName=batch Nodes=n[1-8] Default=YES
        PartitionName=debug Nodes=n[1-2]
        PartitionName=cloud Nodes=c[1-4] SuspendTime=INFINITE SuspendTimeout=90 \\
        ResumeTimeout=600 PowerDownOnIdle=YES
        """
    )
    slurm = parse_slurm_conf_text(text)
    assert slurm.warnings == ()  # every power key is known to cluster.core.slurmconf
    cfg = power_config(slurm)
    assert cfg.resume_program is not None and cfg.resume_program.action == "cloud_resume"
    assert cfg.resume_program.argv == ("/usr/sbin/slurm_resume", "--cloud")
    assert cfg.suspend_program is not None and cfg.suspend_program.location == "slurmd"
    assert cfg.resume_fail_program is not None and cfg.resume_fail_program.argv == ("/usr/sbin/resume_fail",)
    assert (cfg.suspend_time, cfg.suspend_timeout, cfg.resume_timeout) == (600, 45, 120)
    assert (cfg.resume_rate, cfg.suspend_rate) == (10, 0)
    assert cfg.exclusions == Exclusions(
        (ExcNodeSet(frozenset({"n1", "n2", "n3", "n4"}), 2), ExcNodeSet(frozenset({"n8"}))),
        frozenset({"debug"}),
        frozenset({"DOWN", "DRAIN"}),
    )
    assert cfg.keep_power_save_settings
    assert (cfg.power_save_interval, cfg.power_save_min_interval) == (5, 1)
    assert cfg.idle_on_node_suspend and cfg.fast_power_up_launch and cfg.cloud_dns and cfg.debug_power
    assert cfg.node_reg_mem_percent == 80
    assert cfg.node_suspend_time == {"c1": 30, "c2": 30, "c3": 30, "c4": 30}
    cloud = cfg.partitions["cloud"]
    assert (cloud.suspend_time, cloud.suspend_timeout, cloud.resume_timeout) == (INFINITE, 90, 600)
    assert cloud.power_down_on_idle and not cfg.partitions["batch"].power_down_on_idle
    assert cfg.ready and cfg.auto_enabled
    assert cfg.warnings == ()


def test_defaults_without_power_keys() -> None:
    cfg = parse(NODES)
    assert (cfg.suspend_time, cfg.suspend_timeout, cfg.resume_timeout) == (INFINITE, 30, 60)
    assert (cfg.resume_rate, cfg.suspend_rate) == (300, 60)
    assert (cfg.power_save_interval, cfg.power_save_min_interval) == (10, 0)
    assert cfg.suspend_program is None and not cfg.ready and not cfg.auto_enabled
    assert cfg.exclusions == Exclusions()


def test_program_invocations_follow_location() -> None:
    cfg = parse(
        """\
        PowerAction=up Location=slurmctld Program="/usr/sbin/up --fast"
        PowerAction=off Location=slurmd Program="/usr/sbin/shutdown -h now"
        """
    )
    up, off = cfg.actions["up"], cfg.actions["off"]
    assert up.invocations(["n3", "n1", "n2", "n7"]) == (
        Invocation(None, ("/usr/sbin/up", "--fast", "n[1-3,7]")),
    )
    assert off.invocations(["n1", "n2"]) == (
        Invocation("n1", ("/usr/sbin/shutdown", "-h", "now", "n1"), (("SLURM_NODE_NAME", "n1"),)),
        Invocation("n2", ("/usr/sbin/shutdown", "-h", "now", "n2"), (("SLURM_NODE_NAME", "n2"),)),
    )
    assert up.invocations([]) == ()


# --- enabling (power_save.html, "Overview") --------------------------------------------


@pytest.mark.parametrize(
    ("body", "auto"),
    [
        (PROGS + "SuspendTime=600\n" + NODES, True),
        (PROGS + "SuspendTime=INFINITE\n" + NODES, False),
        (PROGS + "SuspendTime=-1\n" + NODES, False),
        (PROGS + "SuspendTime=-30\n" + NODES, False),  # any negative number disables
        (PROGS + "NodeName=n[1-8] CPUs=4\nPartitionName=batch Nodes=n[1-8] SuspendTime=300\n", True),
        (PROGS + "NodeName=n[1-8] CPUs=4\nNodeName=c1 SuspendTime=0\nPartitionName=p Nodes=n1\n", True),
        (PROGS + NODES, False),  # programs alone: manual power saving only
    ],
)
def test_automatic_power_saving_needs_programs_and_a_finite_suspend_time(body: str, auto: bool) -> None:
    cfg = parse(body)
    assert cfg.ready
    assert cfg.auto_enabled is auto


def test_timeouts_default_count_as_defined() -> None:
    # The Hybrid Cluster example of Slurm's power_save.html sets no timeouts: it must load
    # and be enabled.
    cfg = parse(
        """\
        SuspendProgram=/usr/sbin/slurm_suspend
        ResumeProgram=/usr/sbin/slurm_resume
        SuspendTime=600
        SuspendExcNodes=tux[0-127]
        NodeName=tux[0-127] Weight=1 Features=local State=UNKNOWN
        NodeName=ec[0-127] Weight=8 Features=cloud State=CLOUD
        PartitionName=debug MaxTime=1:00:00 Nodes=tux[0-32] Default=YES
        PartitionName=batch MaxTime=8:00:00 Nodes=tux[0-127],ec[0-127]
        """
    )
    assert cfg.auto_enabled and cfg.exclusions.nodes == frozenset(f"tux{i}" for i in range(128))


# --- refused configurations ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "SuspendTime=600\n" + NODES,
            "slurm.conf:3: SuspendTime=600: SuspendTime enables automatic power saving, which needs "
            "SuspendProgram and ResumeProgram (a program path or a PowerAction name)",
        ),
        (
            "SuspendProgram=/x\nNodeName=n1\nPartitionName=p Nodes=n1 SuspendTime=60\n",
            "slurm.conf:5: SuspendTime enables automatic power saving, which needs ResumeProgram",
        ),
        (
            "ResumeProgram=/x\nNodeName=n1 SuspendTime=60\n",
            "slurm.conf:4: SuspendTime enables automatic power saving, which needs SuspendProgram",
        ),
        (PROGS + "ResumeRate=-1\n", "slurm.conf:5: ResumeRate=-1: must be >= 0 (0 = no limit)"),
        (PROGS + "SuspendRate=fast\n", "slurm.conf:5: SuspendRate=fast: not an integer"),
        (PROGS + "SuspendTimeout=0\n", "slurm.conf:5: SuspendTimeout=0: must be at least 1"),
        (PROGS + "ResumeTimeout=soon\n", "slurm.conf:5: ResumeTimeout=soon: not a number of seconds"),
        (PROGS + "SuspendTime=10m\n", "slurm.conf:5: SuspendTime=10m: not a number of seconds or INFINITE"),
        (
            'PowerAction=up Location=slurmd Program="/usr/sbin/wake"\nResumeProgram=up\nSuspendProgram=/x\n',
            "slurm.conf:4: ResumeProgram=up: PowerAction up has Location=slurmd; a power up action must use "
            "Location=slurmctld (a powered down node cannot run a slurmd action)",
        ),
        (
            'PowerAction=f Location=slurmd Program="/usr/sbin/f"\nResumeFailProgram=f\n',
            "slurm.conf:4: ResumeFailProgram=f: PowerAction f has Location=slurmd; ResumeFailProgram",
        ),
        (
            "ResumeProgram=wake_up\nSuspendProgram=/x\n",
            "slurm.conf:3: ResumeProgram=wake_up: neither an absolute path nor a PowerAction name",
        ),
        (
            "PowerAction=a Location=controller Program=/x\n",
            "slurm.conf:3: PowerAction=a: Location=controller must be slurmctld or slurmd",
        ),
        ("PowerAction=a Location=slurmctld\n", "slurm.conf:3: PowerAction=a: Program= is required"),
        (
            "PowerAction=a Location=slurmctld Program=bin/up\n",
            "slurm.conf:3: PowerAction=a: Program=bin/up: not an absolute path",
        ),
        (
            "PowerAction=a Location=slurmctld Program=/x Timeout=5\n",
            "slurm.conf:3: PowerAction=a: unknown parameter Timeout",
        ),
        (
            "PowerAction=a Location=slurmctld Program=/x\nPowerAction=a Location=slurmd Program=/y\n",
            "slurm.conf:4: PowerAction=a: duplicate PowerAction (first defined at slurm.conf:3)",
        ),
        (
            PROGS + "SuspendExcNodes=n[1-4]:0\n" + NODES,
            "slurm.conf:5: SuspendExcNodes=n[1-4]:0: n[1-4]:0: count must be a positive integer",
        ),
        (
            PROGS + "SuspendExcNodes=x[1-2]\n" + NODES,
            "slurm.conf:5: SuspendExcNodes=x[1-2]: x[1-2]: nodes not defined: x[1-2]",
        ),
        (
            PROGS + "SuspendExcParts=gpu\n" + NODES,
            "slurm.conf:5: SuspendExcParts=gpu: no such partition: gpu",
        ),
        (PROGS + "SuspendExcStates=IDLE\n", "slurm.conf:5: SuspendExcStates=IDLE: invalid state IDLE"),
        (
            PROGS + "NodeName=n1\nPartitionName=p Nodes=n1 PowerDownOnIdle=maybe\n",
            "slurm.conf:6: PartitionName=p: PowerDownOnIdle=maybe: must be YES or NO",
        ),
        (
            PROGS + "NodeName=n1\nPartitionName=p Nodes=n1 ResumeTimeout=-5\n",
            "slurm.conf:6: PartitionName=p: ResumeTimeout=-5: must be at least 0",
        ),
        (
            PROGS + "NodeName=n1\nPartitionName=p Nodes=n1 SuspendTimeout=0\n",
            "slurm.conf:6: PartitionName=p: SuspendTimeout=0: must be at least 1",
        ),
        (
            PROGS + "SlurmctldParameters=power_save_interval=0\n",
            "slurm.conf:5: SlurmctldParameters: power_save_interval=0: must be an integer >= 1",
        ),
        (
            PROGS + "SlurmctldParameters=node_reg_mem_percent=150\n",
            "slurm.conf:5: SlurmctldParameters: node_reg_mem_percent=150: must be at most 100",
        ),
    ],
)
def test_bad_power_configuration_is_refused_with_file_and_line(body: str, expected: str) -> None:
    found = errors(body)
    assert any(e.startswith(expected) for e in found), found


def test_every_problem_is_reported_in_file_order() -> None:
    found = errors(
        """\
        SuspendTime=600
        ResumeRate=-1
        SuspendRate=-2
        NodeName=n1
        PartitionName=p Nodes=n1 PowerDownOnIdle=sometimes
        """
    )
    assert [e.split(":")[1] for e in found] == ["3", "4", "5", "7"]


def test_errors_in_an_included_file_name_that_file(tmp_path: Path) -> None:
    (tmp_path / "partitions.conf").write_text("\nPartitionName=p Nodes=n1 SuspendTime=soon\n")
    text = HEAD + PROGS + "NodeName=n1\nInclude partitions.conf\n"
    slurm = parse_slurm_conf_text(text, filename=str(tmp_path / "slurm.conf"))
    with pytest.raises(ConfigError) as info:
        power_config(slurm)
    assert [str(p) for p in info.value.problems] == [
        "partitions.conf:2: PartitionName=p: SuspendTime=soon: not a number of seconds or INFINITE"
    ]


def test_program_check_finds_missing_and_non_executable_programs(tmp_path: Path) -> None:
    good = tmp_path / "resume.sh"
    good.write_text("#!/bin/sh\nexit 0\n")
    good.chmod(0o755)
    plain = tmp_path / "plain.sh"
    plain.write_text("exit 0\n")
    plain.chmod(0o644)
    text = HEAD + f"ResumeProgram={good}\nSuspendProgram={plain}\nResumeFailProgram={tmp_path}/gone\n"
    with pytest.raises(ConfigError) as info:
        power_config(parse_slurm_conf_text(text), program_check=executable_check)
    assert [str(p) for p in info.value.problems] == [
        f"slurm.conf:4: SuspendProgram={plain}: not executable",
        f"slurm.conf:5: ResumeFailProgram={tmp_path}/gone: no such file",
    ]
    ok = power_config(parse_slurm_conf_text(HEAD + f"ResumeProgram={good}\n"), program_check=executable_check)
    assert ok.resume_program is not None and ok.resume_program.path == str(good)


def test_node_level_timeouts_are_ignored_with_a_warning() -> None:
    cfg = parse(PROGS + "NodeName=n1 ResumeTimeout=500\n")
    assert cfg.resume_timeout == 60
    assert [str(w) for w in cfg.warnings] == [
        "slurm.conf:5: NodeName=n1: ResumeTimeout is set globally or per partition; ignored on a node"
    ]


# --- effective per-node values -----------------------------------------------------------


def test_suspend_time_precedence_node_then_partition_then_global() -> None:
    cfg = parse(
        PROGS
        + """\
        SuspendTime=600
        NodeName=n[1-4]
        PartitionName=short Nodes=n[1-2] SuspendTime=100
        PartitionName=long Nodes=n[2-3] SuspendTime=900
        PartitionName=never Nodes=n3 SuspendTime=INFINITE
        PartitionName=plain Nodes=n4
        """
    )
    assert cfg.effective_suspend_time(None, ["plain"]) == 600  # global
    assert cfg.effective_suspend_time(None, ["short"]) == 100  # partition over global
    assert cfg.effective_suspend_time(None, ["short", "long"]) == 900  # the highest partition
    assert cfg.effective_suspend_time(None, ["long", "never"]) == INFINITE  # INFINITE is highest
    assert cfg.effective_suspend_time(50, ["long", "never"]) == 50  # node over partitions
    assert cfg.effective_suspend_time(-1, ["short"]) == INFINITE  # node INFINITE disables
    assert cfg.effective_suspend_time(None, []) == 600


def test_timeouts_take_the_highest_partition_value_else_global() -> None:
    cfg = parse(
        PROGS
        + """\
        ResumeTimeout=100
        SuspendTimeout=20
        NodeName=n[1-2]
        PartitionName=a Nodes=n1 ResumeTimeout=300 SuspendTimeout=10
        PartitionName=b Nodes=n[1-2] ResumeTimeout=200
        PartitionName=c Nodes=n2
        """
    )
    assert cfg.effective_resume_timeout(["a", "b"]) == 300
    assert cfg.effective_resume_timeout(["c"]) == 100
    assert cfg.effective_suspend_timeout(["a", "b"]) == 10  # only a sets it
    assert cfg.effective_suspend_timeout(["b", "c"]) == 20


# --- SuspendExc* -------------------------------------------------------------------------


def test_exc_nodes_forms() -> None:
    sets = parse_exc_nodes("nid[10-20]:4,nid[80-90]:2,tux5")
    assert [(len(s.nodes), s.count) for s in sets] == [(11, 4), (11, 2), (1, None)]
    assert Exclusions(sets).nodes == frozenset({"tux5"})
    assert [s.count for s in Exclusions(sets).counted] == [4, 2]
    assert parse_exc_nodes("") == () and parse_exc_nodes("NONE") == ()
    for bad in ("nid[1-2]:x", "nid[1-2]:", "nid[1-", "a,,b"):
        with pytest.raises(ValueError):
            parse_exc_nodes(bad)


@given(st.lists(st.sampled_from(["CLOUD", "down", "Drain", "RESERVED", "planned", "FAIL"]), min_size=1))
def test_exc_states_are_case_insensitive(words: list[str]) -> None:
    assert parse_exc_states(",".join(words)) == frozenset(w.upper() for w in words)


def test_keep_power_save_settings_on_reconfigure() -> None:
    running = Exclusions(parts=frozenset({"batch"}))  # changed with scontrol since the start
    keep = parse(PROGS + "ReconfigFlags=KeepPowerSaveSettings\nSuspendExcStates=DOWN\n")
    drop = parse(PROGS + "SuspendExcStates=DOWN\n")
    assert exclusions_after_reconfigure(running, keep) == running
    assert exclusions_after_reconfigure(running, drop) == Exclusions(states=frozenset({"DOWN"}))


# --- runtime rules ---------------------------------------------------------------------------


def test_runtime_node_suspend_time_without_power_configuration() -> None:
    cfg = parse(NODES)  # no programs: the rest of the configuration is not valid
    update_finite = node_suspend_time_change(cfg, 300, how="update")
    update_inf = node_suspend_time_change(cfg, INFINITE, how="update")
    assert not update_finite.accepted and not update_inf.accepted
    assert "power save is not configured" in update_inf.message
    assert not node_suspend_time_change(cfg, 300, how="create").accepted
    assert node_suspend_time_change(cfg, INFINITE, how="create").accepted
    assert node_suspend_time_change(cfg, None, how="create").accepted
    registered = node_suspend_time_change(cfg, 300, how="register")
    assert registered.accepted and not registered.enables_auto
    assert "no effect until" in registered.message


def test_runtime_node_suspend_time_with_power_configuration_enables_auto() -> None:
    cfg = parse(PROGS + "SuspendTime=INFINITE\n" + NODES)
    assert not cfg.auto_enabled
    for how in ("update", "create", "register"):
        v = node_suspend_time_change(cfg, 120, how=how)
        assert v.accepted and v.enables_auto and not v.message
    back = node_suspend_time_change(cfg, INFINITE, how="update")
    assert back.accepted and not back.enables_auto
    with pytest.raises(ValueError):
        node_suspend_time_change(cfg, 1, how="guess")


def test_auto_enabled_at_load_counts_runtime_node_values_only_when_ready() -> None:
    ready = parse(PROGS + NODES)
    assert not auto_enabled_at_load(ready, [None, -1])
    assert auto_enabled_at_load(ready, [None, 30])
    assert not auto_enabled_at_load(parse(NODES), [30])


def test_cycle_due_interval_and_min_interval() -> None:
    cfg = parse(PROGS + "SlurmctldParameters=power_save_interval=10,power_save_min_interval=2\n")
    assert cycle_due(cfg, now=0, last_run=None, state_changed=False)
    assert not cycle_due(cfg, now=109, last_run=100, state_changed=False)
    assert cycle_due(cfg, now=110, last_run=100, state_changed=False)
    assert not cycle_due(cfg, now=101, last_run=100, state_changed=True)
    assert cycle_due(cfg, now=102, last_run=100, state_changed=True)


def test_node_reg_mem_percent_defaults_and_setting() -> None:
    cfg = parse(NODES)
    assert registration_memory_ok(cfg, configured_mb=1000, reported_mb=1000, cloud=False)
    assert not registration_memory_ok(cfg, configured_mb=1000, reported_mb=950, cloud=False)
    assert registration_memory_ok(cfg, configured_mb=1000, reported_mb=900, cloud=True)
    assert not registration_memory_ok(cfg, configured_mb=1000, reported_mb=899, cloud=True)
    set80 = parse("SlurmctldParameters=node_reg_mem_percent=80\n")
    assert registration_memory_ok(set80, configured_mb=1000, reported_mb=800, cloud=False)
    assert registration_memory_ok(set80, configured_mb=1000, reported_mb=850, cloud=True)
