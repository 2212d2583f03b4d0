"""scontrol: record layouts, update bodies, verb tables, errors."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from cli.scontrol import (
    config_lines,
    job_record,
    job_update_body,
    lookup,
    node_record,
    node_update_body,
    partition_record,
    render_record,
)


def test_show_job_layout(objs):
    text = render_record(job_record(objs.job(user="nosuchuser-xyz", mem_per_node=4096)))
    lines = text.split("\n")
    assert lines[0] == "JobId=12 JobName=wrap"
    assert lines[1] == "   UserId=nosuchuser-xyz GroupId=(null) MCS_label=N/A"
    assert lines[3] == "   JobState=RUNNING Reason=None Dependency=(null)"
    assert lines[5] == "   RunTime=00:00:12 TimeLimit=01:00:00 TimeMin=N/A"
    assert "   StartTime=2024-03-01T10:00:05 EndTime=2024-03-01T11:00:05 Deadline=N/A" in lines
    assert "   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*" in lines
    assert "   MinCPUsNode=1 MinMemoryNode=4G MinTmpDiskNode=0" in lines
    assert lines[-3:] == ["   StdOut=/tmp/slurm-12.out", "", ""]
    keys = [pair.split("=")[0] for line in lines for pair in line.split()]
    order = [
        "JobId",
        "JobName",
        "UserId",
        "Priority",
        "JobState",
        "ExitCode",
        "RunTime",
        "SubmitTime",
        "StartTime",
        "Partition",
        "ReqNodeList",
        "NodeList",
        "BatchHost",
        "NumNodes",
        "ReqTRES",
        "MinMemoryNode",
        "Features",
        "Licenses",
        "Command",
        "WorkDir",
        "StdErr",
        "StdIn",
        "StdOut",
    ]
    assert [k for k in keys if k in order] == order


def test_pending_array_task_record(objs):
    text = render_record(job_record(objs.pending(array_job_id=10, array_task_id=2, reservation="maint")))
    assert text.startswith("JobId=12 ArrayJobId=10 ArrayTaskId=2 JobName=wrap\n")
    assert "   StartTime=Unknown EndTime=Unknown Deadline=N/A\n" in text
    assert "   Reservation=maint\n" in text
    assert "   NodeList=(null)\n" in text
    assert "   NumNodes=1-1 " in text
    assert "   AllocTRES=(null)\n" in text


def test_an_ended_job_keeps_its_alloc_tres(objs):
    # slurmctld keeps a job's tres_alloc_str after it ends (until MinJobAge purges it); a
    # job cancelled while pending never had one.
    ended = objs.job(state="COMPLETED", state_compact="CD", tres="cpu=2,mem=100M,node=1,billing=2")
    assert "   AllocTRES=cpu=2,mem=100M,node=1,billing=2\n" in render_record(job_record(ended))
    never = objs.pending(state="CANCELLED", state_compact="CA")
    assert "   AllocTRES=(null)\n" in render_record(job_record(never))


def test_the_pass_that_weighed_or_started_the_job(objs):
    started = objs.job(last_sched_eval="2030-01-01T10:00:00+00:00", started_by_backfill=True)
    text = render_record(job_record(started))
    assert " SecsPreSuspend=0 LastSchedEval=2030-01-01T10:00:00 Scheduler=Backfill\n" in text
    never = render_record(job_record(objs.pending()))
    assert " LastSchedEval=Unknown Scheduler=Main\n" in never


def test_a_pending_job_shows_backfill_s_plan(api, capsys, objs):
    start, end = "2030-01-01T10:00:00+00:00", "2030-01-01T10:05:00+00:00"
    planned = objs.pending(start_time=start, end_time=end, sched_nodes="node[01-08]")
    api.routes[("GET", "/api/jobs/12/")] = (200, planned)
    assert main(["fsched", "scontrol", "show", "job", "12"]) == 0
    text = capsys.readouterr().out
    assert "   StartTime=2030-01-01T10:00:00 EndTime=2030-01-01T10:05:00 Deadline=N/A\n" in text
    assert "   NodeList=(null) SchedNodeList=node[01-08]\n" in text
    assert api.requests[-1]["query"] == "start=1"  # the controller's plan was asked for


def test_one_liner(objs):
    text = render_record(job_record(objs.job()), one_liner=True)
    assert text.count("\n") == 1
    assert text.startswith("JobId=12 JobName=wrap UserId=")


def test_show_node_and_partition(objs):
    node = objs.node(
        "node01",
        state="IDLE+DRAIN",
        reason="disk",
        reason_user="root",
        reason_time="2024-03-01T09:00:00Z",
        cpu_load=0.5,
    )
    text = render_record(node_record(node))
    assert text.startswith(
        "NodeName=node01 Arch=(null) CoresPerSocket=1\n   CPUAlloc=0 CPUEfctv=4 CPUTot=4 CPULoad=0.50\n"
    )
    assert "   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n" in text
    assert text.endswith("   Reason=disk [root@2024-03-01T09:00:00]\n\n")

    part = objs.partition(max_time=60, extra={"LoadSchedCPU": "0.5", "Hidden": "YES"})
    text = render_record(partition_record(part))
    assert text.startswith("PartitionName=debug\n   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n")
    assert "   AllocNodes=ALL Default=YES QoS=N/A\n" in text
    assert "Hidden=YES\n" in text  # extra overrides the default in place
    assert "   MaxNodes=UNLIMITED MaxTime=01:00:00 MinNodes=1 " in text
    assert "   State=UP TotalCPUs=16 TotalNodes=4 SelectTypeParameters=NONE\n" in text
    assert text.endswith("   LoadSchedCPU=0.5\n\n")


def test_show_config_lines():
    config = {
        "cluster_name": "c1",
        "options": {"SchedulerType": "sched/backfill", "AuthType": ""},
        "licenses": {"flat": 2, "natural": 1},
    }
    assert config_lines(config, "2024-03-01T10:00:00") == [
        "Configuration data as of 2024-03-01T10:00:00",
        "AuthType                = (null)",
        "ClusterName             = c1",
        "Licenses                = flat:2,natural:1",
        "SchedulerType           = sched/backfill",
    ]


def test_update_bodies():
    pairs = [("NodeName", "node[01-02]"), ("State", "drain"), ("Reason", "disk failure"), ("Weight", "5")]
    assert node_update_body(pairs) == {
        "nodes": "node[01-02]",
        "state": "DRAIN",
        "reason": "disk failure",
        "weight": 5,
    }
    with pytest.raises(ValueError, match="You must specify a reason when DOWNING or DRAINING a node"):
        node_update_body([("NodeName", "n1"), ("State", "DOWN")])
    with pytest.raises(
        ValueError, match=r"^Invalid input: State=sleepy\nRequest aborted\nValid states are: "
    ):
        node_update_body([("NodeName", "n1"), ("State", "sleepy")])
    assert job_update_body(
        [("TimeLimit", "2:00:00"), ("partition", "long"), ("Name", "x"), ("Priority", "5")]
    ) == {
        "time_limit": "2:00:00",
        "partition": "long",
        "name": "x",
        "priority": 5,
    }
    with pytest.raises(
        ValueError, match=r"^Update of this parameter is not supported: Foo=1\nRequest aborted$"
    ):
        job_update_body([("Foo", "1")])


def test_a_refused_key_says_request_aborted(api, capsys):
    """src/scontrol/update_job.c and update_node.c: the key's line, then "Request aborted"
    (fprintf to stderr, no prefix), exit 1, nothing sent."""
    assert main(["fsched", "scontrol", "update", "JobId=12", "Bogus=1"]) == 1
    assert capsys.readouterr().err == "Update of this parameter is not supported: Bogus=1\nRequest aborted\n"
    assert main(["fsched", "scontrol", "update", "NodeName=node01", "State=sleepy"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Invalid input: State=sleepy\nRequest aborted\nValid states are: NoResp DRAIN")
    assert not api.requests


def test_keyword_lookup():
    table = {"job": 1, "node": 2, "partition": 3, "config": 4}
    assert lookup(table, "jobs") == "job"
    assert lookup(table, "PART") == "partition"
    assert lookup(table, "n") == "node"
    assert lookup(table, "x") is None


def test_an_array_s_own_id_shows_every_task(api, capsys, objs):
    tasks = [objs.job(job_id=12 + i, array_job_id=12, array_task_id=i + 1) for i in range(3)]
    api.routes[("GET", "/api/jobs/12/")] = (200, tasks[0])
    api.routes[("GET", "/api/jobs/")] = (200, {"count": 3, "next": None, "results": tasks})
    assert main(["fsched", "scontrol", "show", "job", "12"]) == 0
    shown = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("JobId=")]
    assert shown == ["JobId=12", "JobId=13", "JobId=14"]
    assert "array_job_id=12" in api.requests[-1]["query"]
    api.routes[("GET", "/api/jobs/13/")] = (200, tasks[1])  # a task's own id: that task
    assert main(["fsched", "scontrol", "show", "job", "13"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if line.startswith("JobId=")] == ["JobId=13"]


def test_show_over_http(api, capsys, objs):
    api.routes[("GET", "/api/jobs/12/")] = (200, objs.job())
    assert main(["fsched", "scontrol", "show", "job", "12", "-o"]) == 0
    assert capsys.readouterr().out.startswith("JobId=12 JobName=wrap UserId=")
    assert main(["fsched", "scontrol", "--json", "show", "job", "12"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(j["job_id"], j["name"]) for j in doc["jobs"]] == [(12, "wrap")]
    assert doc["meta"]["command"] == ["scontrol", "--json", "show", "job"]  # argv but its last word
    assert main(["fsched", "scontrol", "show", "job", "99"]) == 1
    assert capsys.readouterr().err == "slurm_load_jobs error: Invalid job id specified\n"
    api.routes[("GET", "/api/partitions/")] = (200, api.page([objs.partition()]))
    assert main(["fsched", "scontrol", "show", "part", "nosuch"]) == 1
    assert capsys.readouterr().err == "Partition nosuch not found\n"
    assert main(["fsched", "scontrol", "frobnicate"]) == 1
    assert capsys.readouterr().err == "invalid keyword: frobnicate\n"


def test_update_and_actions_over_http(api, capsys):
    api.routes[("POST", "/api/nodes/update/")] = (200, {"updated": ["node01"]})
    assert main(["fsched", "scontrol", "update", "NodeName=node01", "State=DRAIN", "Reason=disk bad"]) == 0
    assert api.requests[-1]["body"] == {"nodes": "node01", "state": "DRAIN", "reason": "disk bad"}

    api.routes[("PATCH", "/api/jobs/12/")] = (400, {"error": "Job is no longer pending execution"})
    assert main(["fsched", "scontrol", "update", "JobId=12", "Partition=long"]) == 1
    assert capsys.readouterr().err == "Job is no longer pending execution for job 12\n"

    api.routes[("POST", "/api/jobs/12/hold/")] = (200, {})
    api.routes[("POST", "/api/jobs/13/hold/")] = (400, {"error": "Job has already finished"})
    assert main(["fsched", "scontrol", "hold", "12,13"]) == 1
    assert capsys.readouterr().err == "Job has already finished for job 13\n"
    assert [r["path"] for r in api.requests[-2:]] == ["/api/jobs/12/hold/", "/api/jobs/13/hold/"]


def test_reconfigure_errors(api, capsys):
    api.routes[("POST", "/api/reconfigure/")] = (
        400,
        {"error": "Invalid configuration", "errors": ["slurm.conf:12: bad hostlist node[40-41"]},
    )
    assert main(["fsched", "scontrol", "reconfigure"]) == 1
    assert capsys.readouterr().err == (
        "slurm_reconfigure error: Invalid configuration\nslurm.conf:12: bad hostlist node[40-41\n"
    )
    api.routes[("POST", "/api/reconfigure/")] = (
        200,
        {"message": "ok", "warnings": ["node09 has no partition"]},
    )
    assert main(["fsched", "scontrol", "reconfig"]) == 0
    assert capsys.readouterr().err == "scontrol: warning: node09 has no partition\n"


def test_cloud_accounting_in_show_node_and_update_body():
    from cli.scontrol import node_record, node_update_body

    record = node_record({"name": "cloud01", "instance_id": "i-1", "instance_type": "t3", "extra": "x=1"})
    flat = [pair for line in record for pair in line]
    assert ("InstanceId", "i-1") in flat and ("InstanceType", "t3") in flat and ("Extra", "x=1") in flat
    body = node_update_body([("NodeName", "cloud01"), ("InstanceId", "i-2"), ("Extra", "y")])
    assert body == {"nodes": "cloud01", "instance_id": "i-2", "extra": "y"}


def test_reboot_words_as_scontrol_takes_them():
    from cli.scontrol import reboot_body

    assert reboot_body(["ASAP", "nextstate=res", "Reason=new kernel", "node[01-02]"]) == {
        "asap": True,
        "next_state": "RESUME",
        "reason": "new kernel",
        "nodes": "node[01-02]",
    }
    assert reboot_body(["ALL"]) == {"nodes": "ALL"}
    assert reboot_body(["NextState=D", "n1"]) == {"next_state": "DOWN", "nodes": "n1"}
    for words, error in [
        ([], "Missing node list. Specify ALL|<NodeList>"),
        (["n1", "n2"], "Multiple node lists specified"),
        (["nextstate=up", "n1"], "Invalid state: up\n Valid states: DOWN, RESUME"),
        (["reason=", "n1"], "missing reason"),
        (["a", "b", "c", "d", "e", "f", "g"], "too many arguments for keyword:reboot"),
    ]:
        with pytest.raises(ValueError) as caught:
            reboot_body(words)
        assert str(caught.value) == error


def test_reboot_and_cancel_reboot_over_http(api, capsys, objs):
    api.routes[("POST", "/api/nodes/reboot/")] = (
        200,
        {"nodes": ["node02"], "skipped": ["node01"],
         "message": "Skipping reboot of nodes node01 due to current node state."},
    )  # fmt: skip
    assert main(["fsched", "scontrol", "reboot", "asap", "node[01-02]"]) == 0
    assert api.requests[-1]["body"] == {"asap": True, "nodes": "node[01-02]"}
    assert (
        capsys.readouterr().err
        == "scontrol: error: Skipping reboot of nodes node01 due to current node state.\n"
    )
    api.routes[("POST", "/api/nodes/reboot/")] = (400, {"error": "RebootProgram isn't defined"})
    assert main(["fsched", "scontrol", "reboot_nodes", "node01"]) == 1
    assert (
        capsys.readouterr().err
        == "scontrol: error: RebootProgram isn't defined\nscontrol_reboot_nodes error\n"
    )
    requests = len(api.requests)
    assert main(["fsched", "scontrol", "reboot"]) == 1
    assert capsys.readouterr().err == "Missing node list. Specify ALL|<NodeList>\n"
    assert len(api.requests) == requests  # nothing asked
    api.routes[("POST", "/api/nodes/cancel_reboot/")] = (400, {"error": "Invalid node state transition"})
    assert main(["fsched", "scontrol", "cancel_reboot", "node01"]) == 1
    assert capsys.readouterr().err == "slurm_update error: Invalid node state transition\n"
    assert api.requests[-1]["body"] == {"nodes": "node01"}
    assert main(["fsched", "scontrol", "cancel_reboot"]) == 1
    assert capsys.readouterr().err == "missing argument for keyword:cancel_reboot\n"


def test_show_node_prints_next_state_while_a_reboot_is_pending(objs):
    from cli.scontrol import node_record, render_record

    node = objs.node(
        "node01", "boot", "reboot", "IDLE", flags=["DRAIN", "REBOOT_REQUESTED"], next_state="DOWN"
    )
    text = render_record(node_record(node))
    assert "\n   NextState=DOWN\n" in text
    assert "NextState" not in render_record(node_record(objs.node("node02")))


def test_show_job_prints_the_mail_line_of_a_job_that_asked_for_mail(objs):
    """(#16 point 6) MailUser= (the job's user unless --mail-user) and MailType= in
    print_mail_type's order, after StdOut; nothing for a job that asked for none."""
    lines = render_record(job_record(objs.job(mail_type="BEGIN,END", mail_user=""))).split("\n")
    user = objs.job()["user"]
    assert lines[-4:-2] == ["   StdOut=/tmp/slurm-12.out", f"   MailUser={user} MailType=BEGIN,END"]
    lines = render_record(job_record(objs.job(mail_type="FAIL", mail_user="ann@example.org"))).split("\n")
    assert "   MailUser=ann@example.org MailType=FAIL" in lines
    assert not any("MailUser" in line for line in render_record(job_record(objs.job())).split("\n"))


def test_ping_names_the_controller_and_says_up_or_down(api, capsys, monkeypatch):
    api.routes[("GET", "/api/config/")] = (200, {"options": {"SlurmctldHost": "ctl1(10.0.0.1)"}})
    assert main(["fsched", "scontrol", "ping"]) == 0
    assert capsys.readouterr().out == "Slurmctld(primary) at ctl1 is UP\n"
    # Refusing this user is still an answer: the controller is up.
    api.routes[("GET", "/api/config/")] = (401, {"error": "Authentication credentials were not provided."})
    assert main(["fsched", "scontrol", "ping"]) == 0
    assert capsys.readouterr().out.endswith(" is UP\n")
    monkeypatch.setenv("FSCHED_URL", "http://127.0.0.1:9")  # nothing listens on discard
    assert main(["fsched", "scontrol", "ping"]) == 1
    assert capsys.readouterr().out.startswith("Slurmctld(primary) at 127.0.0.1 is DOWN\n")


def test_show_hostlist_folds_in_order_and_hostlistsorted_sorts(capsys):
    assert main(["fsched", "scontrol", "show", "hostlist", "node05,node01,node02"]) == 0
    assert main(["fsched", "scontrol", "show", "hostlistsorted", "node05,node01,node02"]) == 0
    assert capsys.readouterr().out == "node[05,01-02]\nnode[01-02,05]\n"
    assert main(["fsched", "scontrol", "show", "hostlist", "node[1-"]) == 1
