"""What --json takes from the controller's configuration besides the records: the
cluster, the accounting plugin, SlurmdPort and whether CPUs or cores are allocated."""

from __future__ import annotations

import json

from cli.main import main


def config(**options: str) -> dict:
    return {"cluster_name": "blue", "options": options, "licenses": {}, "loaded_at": "", "version": 1}


def test_the_configuration_names_the_cluster_plugin_port_and_cpu_counting(api, capsys, objs):
    api.routes[("GET", "/api/config/")] = (
        200,
        config(
            AccountingStorageType="accounting_storage/slurmdbd",
            SlurmdPort="7003",
            SelectTypeParameters="CR_CPU_Memory",
        ),
    )
    api.routes[("GET", "/api/nodes/node01/")] = (200, objs.node("node01"))
    api.routes[("GET", "/api/jobs/12/")] = (200, objs.job(node_list="node01"))
    assert main(["fsched", "scontrol", "show", "node", "node01", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["meta"]["plugin"]["accounting_storage"] == "accounting_storage/slurmdbd"
    assert doc["meta"]["slurm"]["cluster"] == "blue" and doc["nodes"][0]["port"] == 7003
    assert main(["fsched", "scontrol", "show", "job", "12", "--json"]) == 0
    (job,) = json.loads(capsys.readouterr().out)["jobs"]
    assert (
        job["cluster"],
        job["job_resources"]["allocated_cpus"],
        job["job_resources"]["allocated_cores"],
    ) == (
        "blue",
        1,
        0,
    )


def test_without_a_configuration_the_defaults(api, capsys, objs):
    # accounting_storage/none is no plugin (read_config.c); SlurmdPort's default is 6818.
    api.routes[("GET", "/api/config/")] = (200, config(AccountingStorageType="accounting_storage/none"))
    api.routes[("GET", "/api/nodes/node01/")] = (200, objs.node("node01"))
    assert main(["fsched", "scontrol", "show", "node", "node01", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["meta"]["plugin"]["accounting_storage"], doc["nodes"][0]["port"]) == ("", 6818)
    del api.routes[("GET", "/api/config/")]  # an older controller: 404, the meta's cluster is unset
    assert main(["fsched", "scontrol", "show", "node", "node01", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["slurm"]["cluster"] == ""
