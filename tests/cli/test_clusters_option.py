"""-M/--clusters: the local cluster (slurm.conf's ClusterName, or ``all``) is accepted on
every command that has the option, any other name is refused in Slurm's words before
anything is sent, and the outputs name the cluster where Slurm's do."""

from __future__ import annotations

import pytest

from cli.main import main

REFUSED = (
    "{prog}: error: No cluster 'other' known by database.\n"
    "{prog}: error: 'other' can't be reached now, or it is an invalid entry for --cluster.  "
    "Use 'sacctmgr list clusters' to see available clusters.\n"
)


@pytest.fixture
def cluster_api(api, objs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    api.routes[("GET", "/api/config/")] = (200, {"cluster_name": "demo", "options": {}})
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 5, "job_ids": [5], "array_job_id": None})
    api.routes[("GET", "/api/jobs/")] = (200, api.page([objs.job(job_id=5)]))
    api.routes[("GET", "/api/jobs/5/")] = (200, objs.job(job_id=5))
    api.routes[("GET", "/api/partitions/")] = (200, api.page([objs.partition()]))
    api.routes[("GET", "/api/nodes/")] = (200, api.page([objs.node("node01", partitions=["debug"])]))
    api.routes[("POST", "/api/jobs/cancel/")] = (200, {"cancelled": [5], "errors": []})
    api.routes[("GET", "/api/limits/sshare/")] = (200, {"rows": []})
    return api


def test_sbatch_names_the_cluster_it_submitted_to(cluster_api, capsys):
    assert main(["fsched", "sbatch", "-M", "demo", "--wrap", "true"]) == 0
    assert capsys.readouterr().out == "Submitted batch job 5 on cluster demo\n"
    assert main(["fsched", "sbatch", "--clusters=DEMO", "--parsable", "--wrap", "true"]) == 0
    assert capsys.readouterr().out == "5;demo\n"
    assert main(["fsched", "sbatch", "--wrap", "true"]) == 0  # no -M: no cluster, no extra request
    assert capsys.readouterr().out == "Submitted batch job 5\n"
    assert [r["path"] for r in cluster_api.requests].count("/api/config/") == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["sbatch", "-M", "other", "--wrap", "true"],
        ["squeue", "-M", "other"],
        ["sinfo", "--clusters", "other"],
        ["scancel", "-M", "other", "5"],
        ["scontrol", "-M", "other", "show", "job", "5"],
        ["sshare", "-M", "other"],
        ["sprio", "-M", "other"],
        ["sdiag", "-M", "other"],
    ],
)
def test_another_cluster_is_refused_before_anything_is_sent(cluster_api, capsys, argv):
    with pytest.raises(SystemExit) as raised:
        main(["fsched", *argv])
    assert raised.value.code == 1
    assert capsys.readouterr().err == REFUSED.format(prog=argv[0])
    assert [r["path"] for r in cluster_api.requests] == ["/api/config/"]


def test_squeue_heads_its_output_with_the_cluster_unless_noheader(cluster_api, capsys):
    assert main(["fsched", "squeue", "-M", "demo", "-o", "%i"]) == 0
    assert capsys.readouterr().out == "CLUSTER: demo\nJOBID\n5\n"
    assert main(["fsched", "squeue", "-M", "all", "-h", "-o", "%i"]) == 0
    assert capsys.readouterr().out == "5\n"


def test_sinfo_heads_its_output_with_the_cluster_even_without_header(cluster_api, capsys):
    assert main(["fsched", "sinfo", "-M", "demo", "-h", "-o", "%P"]) == 0
    assert capsys.readouterr().out == "CLUSTER: demo\ndebug*\n"


def test_one_unknown_name_among_known_ones_is_reported_and_the_rest_served(cluster_api, capsys):
    assert main(["fsched", "scancel", "-M", "nope,demo", "5"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "scancel: error: No cluster 'nope' known by database.\n"
    assert cluster_api.requests[-1]["path"] == "/api/jobs/cancel/"
    assert main(["fsched", "scontrol", "--clusters", "demo", "show", "job", "5"]) == 0
    assert capsys.readouterr().out.startswith("JobId=5 ")
