"""sacct's step statistics fields as src/sacct/print.c prints them (cli/sacct_stats.py),
from the accounting API's step sums (slurmwords.step_statistics)."""

from __future__ import annotations

from cli import sacct_fields
from slurmwords import sstat_fields as sf
from slurmwords import step_statistics

MiB = 1 << 20


def task(
    n: int, *, rss: int, cpu: float, read: int | None, written: int | None, freq: int = 2_600_000
) -> dict:
    return {
        "task": n, "pids": [n], "rss_kb": rss, "max_rss_kb": rss, "vmem_kb": 2 * rss,
        "max_vmem_kb": 2 * rss, "pages": 3, "max_pages": 3, "cpu_secs": cpu, "read_bytes": read,
        "max_read_bytes": read, "write_bytes": written, "max_write_bytes": written, "cpu_freq": freq,
    }  # fmt: skip


JOB = {"job_id": 7, "steps": []}


def printed(fields: str, step: dict | None, units: str | None = None) -> str:
    cols = sacct_fields.parse_fields(fields)
    layout = sacct_fields.Layout(parsable="P")
    return sacct_fields.line(cols, (JOB, step), layout, sacct_fields.Options(units)).rstrip("\n")


def step_with(*tasks: dict) -> dict:
    part = {"node": "node01", "tasks": [step_statistics.merge_task(t["task"], t, None) for t in tasks]}
    summed = sf.step_stats(7, {"step": "0", "nodes": [part]})
    wire = step_statistics.to_wire(summed, (1.25, 0.5))
    return {"step_id": "0", "stats": wire, "total_cpu_secs": step_statistics.total_cpu_secs(wire)}


def test_sizes_are_exact_to_half_units_and_follow_units():
    step = step_with(
        task(0, rss=1536, cpu=65, read=None, written=None), task(1, rss=512, cpu=5, read=None, written=None)
    )
    assert printed("maxrss,averss,maxvmsize,avevmsize,maxpages,avepages", step) == "1.50M|1M|3M|2M|3|3"
    assert printed("maxrss,averss", step, units="K") == "1536K|1024K"
    assert printed("maxrssnode,maxrsstask,mincpu,mincpunode,mincputask,avecpu", step) == (
        "node01|0|00:00:05|node01|1|00:00:35"
    )


def test_disk_figures_are_megabytes_as_print_c_divides_them():
    step = step_with(
        task(0, rss=1, cpu=1, read=1_500_000, written=3 << 30),
        task(1, rss=1, cpu=1, read=0, written=MiB // 4),
    )
    fields = (
        "maxdiskread,maxdiskreadnode,maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritetask,avediskwrite"
    )
    # 1.43M: 1500000 bytes; ave 750000 bytes is under 1M; 3G written by task 0, half of 3G+256K.
    assert printed(fields, step) == "1.43M|node01|0|0.72M|3G|0|1.50G"
    assert printed("maxdiskread,maxdiskwrite", step, units="K") == "1464.84K|3145728K"


def test_frequency_energy_and_cpu_times():
    step = step_with(task(0, rss=1, cpu=1, read=None, written=None, freq=2_600_000))
    assert printed("avecpufreq,consumedenergy,consumedenergyraw", step) == "2.60G|0|0"
    assert printed("totalcpu,usercpu,systemcpu", step) == "00:01.750|00:01.250|00:00.500"


def test_the_job_s_own_line_and_a_step_without_statistics_print_none():
    fields = "avecpu,averss,maxrss,maxrssnode,maxdiskread,mincpu,avecpufreq,consumedenergy"
    assert printed(fields, None) == "|||||||0"  # ConsumedEnergy reads the job's AllocTRES: 0
    assert printed(fields, {"step_id": "0", "stats": None}) == "|||||||0"


def test_the_job_s_cpu_times_are_its_steps_added_up():
    first, second = (
        step_with(task(0, rss=1, cpu=1, read=None, written=None)),
        {"step_id": "batch", "total_cpu_secs": 2.0},
    )
    job = {"job_id": 7, "steps": [first, second]}
    cols = sacct_fields.parse_fields("totalcpu,usercpu,systemcpu")
    out = sacct_fields.line(cols, (job, None), sacct_fields.Layout(parsable="P"), sacct_fields.Options())
    assert out == "00:03.750|00:01.250|00:00.500\n"


def test_the_tres_usage_lists_are_sacct_s():
    step = step_with(
        task(0, rss=1536, cpu=65, read=2048, written=None), task(1, rss=512, cpu=5, read=1024, written=None)
    )
    fields = "tresusageinmax,tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinave,tresusageintot"
    assert printed(fields, step) == (
        "cpu=00:01:05,energy=0,fs/disk=2K,mem=1.50M,pages=3,vmem=3M"
        "|cpu=node01,energy=node01,fs/disk=node01,mem=node01,pages=node01,vmem=node01"
        "|cpu=0,fs/disk=0,mem=0,pages=0,vmem=0"  # task ids as plain numbers, cpu's too
        "|cpu=00:00:05,energy=0,fs/disk=1K,mem=512K,pages=3,vmem=1M"
        "|cpu=00:00:35,energy=0,fs/disk=1.50K,mem=1M,pages=3,vmem=2M"
        "|cpu=00:01:10,energy=0,fs/disk=3K,mem=2M,pages=6,vmem=4M"
    )
    assert printed("tresusageinmax", step, units="K").endswith("mem=1536K,pages=0.00K,vmem=3072K")
    assert printed("tresusageoutmax,tresusageinmax", None) == "|"
