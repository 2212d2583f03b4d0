"""cli.fastargs: the same namespace as argparse for every line it accepts, and argparse for the rest."""

from __future__ import annotations

import contextlib
import io
import random
import socket
import subprocess
import sys

import pytest

from cli import fastargs, sbatch, sinfo, squeue

# Words chosen to hit every branch of both parsers: clustered flags, attached
# and separate values, "=" forms, ints good and bad, "--", "-", negative
# numbers, spaces, unknown and prefix-abbreviated options, help.
WORDS = {
    sbatch: [
        *("-p", "debug", "-pdebug", "--partition", "--partition=x", "--partition=", "-p=x", "-pa=b"),
        *("-H", "-HW", "-Hpdebug", "-Hp", "-H=x", "--hold", "--hold=1", "--hold=", "-QV", "-Vq", "-Wx"),
        *("-c", "4", "-c4", " 4", "+4", "4_0", "-c-1", "-Hc", "-Hc4", "-HcX", "--ntasks=3", "--ntasks=x"),
        *("-n", "two", "-N2", "-1", "--", "-", "", "-- x", "-a b", "a b", "job.sh", "x"),
        *("--wrap", "--wrap=true", "--wrap=a=b", "-J", "my job", "-Jmy job", "--part=debug", "--foo"),
        *("--exclusive", "--exclusive=1", "--mail-type=END", "--mail-type", "-G", "2", "--gpus=1", "-d"),
        *("--no-requeue", "--requeue", "--license=a", "-L", "-x", "-xnode1", "-h", "--help", "-Hh"),
    ],
    squeue: [
        *("-u", "alice", "-ualice", "--user=bob", "--user", "-h", "-hl", "-hu", "-hualice", "--help"),
        *("-i", "5", "-i5", "-i=5", "--iterate=x", "-ix", "--me", "--me=1", "--json", "-r", "-V", "-l"),
        *("-o", "%i %j", "-o%i", "--format=%.5i", "-S", "-t", "--states=all", "-", "--", "x", "-1", "-z"),
    ],
    sinfo: [
        *("-N", "-Nl", "-Nel", "-R", "-s", "-h", "--help", "--Node", "--node", "-n", "node01", "-nnode[1-2]"),
        *("-p", "debug", "--partition=batch", "-o", "%P %N", "-t", "idle", "--json", "-V", "x", "--", "-"),
    ],
}


def _argparse(parser, argv: list[str]) -> dict | None:
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            return vars(parser.parse_args(argv))
    except SystemExit:
        return None


def _fast(module, argv: list[str]) -> dict | None:
    rest = getattr(module, "POSITIONALS", None)
    return fastargs.parse(argv, module.OPTIONS, rest)


@pytest.mark.parametrize("module", [sbatch, squeue, sinfo], ids=lambda m: m.PROG)
def test_every_line_it_accepts_parses_as_argparse_does(module):
    parser = module.build_parser()
    rng = random.Random(module.PROG)
    accepted = 0
    for _ in range(4000):
        argv = [rng.choice(WORDS[module]) for _ in range(rng.randint(0, 6))]
        fast = _fast(module, argv)
        if fast is None:
            continue
        accepted += 1
        expected = _argparse(parser, argv)
        assert expected is not None, argv
        assert list(fast.items()) == list(expected.items()), argv  # the namespace's order too
    assert accepted > 400  # the generator does reach the fast path


@pytest.mark.parametrize(
    "argv",
    [
        ["--wrap=true"],
        ["--wrap", "hostname; sleep 5"],
        ["-p", "debug", "-N2", "-c", "4", "-t10", "job.sh", "a", "-b", "--c=d"],
        ["-HWpdebug", "--parsable", "-Jname", "--export=NONE", "--no-requeue", "job.sh"],
        ["--mail-type=END", "--exclusive", "-n", "2", "--wrap="],
        ["-L", "natural:10", "--license=x", "-a", "0-15%4", "--array=1,3"],
        ["--part=debug", "--lic", "a", "--wra=true"],
    ],
)
def test_sbatch_lines_people_type_take_the_fast_path(argv):
    fast = _fast(sbatch, argv)
    assert fast is not None
    assert fast == _argparse(sbatch.build_parser(), argv)


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        (sbatch, ["-h"]),
        (sbatch, ["--help"]),
        (sbatch, ["--", "job.sh"]),
        (sbatch, ["-n", "two", "--wrap", "true"]),
        (sbatch, ["--c=debug"]),
        (sbatch, ["--h"]),
        (sbatch, ["-p", "-x"]),
        (sbatch, ["-p"]),
        (sbatch, ["-p=debug"]),
        (sbatch, ["--hold=1"]),
        (sbatch, ["-"]),
        (squeue, ["--help"]),
        (squeue, ["extra"]),
        (sinfo, ["--node"]),
    ],
)
def test_what_argparse_must_word_goes_to_argparse(module, argv):
    assert _fast(module, argv) is None


def test_help_is_argparse_s(capsys):
    with pytest.raises(SystemExit) as raised:
        squeue.parse_args(["--help"])
    assert raised.value.code == 0
    assert capsys.readouterr().out.startswith("usage: squeue [OPTIONS]")


def test_parse_args_gives_the_same_namespace_either_way():
    for argv in (["-p", "debug", "--wrap=x"], ["-p=debug", "--wrap=x"]):
        ns = sbatch.parse_args(argv)
        assert (ns.partition, ns.wrap, ns.script, ns.script_args, ns.hold) == ("debug", "x", None, [], None)
    assert squeue.parse_args(["-hu", "alice"]).noheader is True
    assert squeue.parse_args(["-u=alice"]).user == "alice"  # through argparse
    assert sinfo.parse_args([]).Node is False


def test_a_submission_imports_neither_argparse_nor_json(tmp_path):
    """The start-up budget (cli/__init__.py): the common path stays on the standard library's
    light side (dataclasses and re cost 20 and 8 ms of each sbatch)."""
    code = (
        "import sys\n"
        "from cli.main import main\n"
        "code = main(['fsched', 'sbatch', '-p', 'debug', '--wrap=true'])\n"
        "heavy = {'argparse', 'json', 'typing', 'http.client', 'dataclasses', 're'}\n"
        "print(code, sorted(heavy & set(sys.modules)))\n"
    )
    with socket.socket() as sock:  # a port nobody listens on: the run ends at connect()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        "FSCHED_URL": f"http://127.0.0.1:{port}",
        "FSCHED_CLI_CONFIG": str(tmp_path / "none.json"),
        "PATH": "",
    }
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.stdout == "1 []\n", done.stderr
    assert done.stderr == (
        "fsched: error: Unable to contact slurm controller (connect failure)\n"
        f"fsched: error: tried http://127.0.0.1:{port}: Connection refused\n"
    )


@pytest.mark.parametrize("parse", ["fast", "argparse"])
def test_long_options_may_be_shortened_as_getopt_long_allows(parse):
    """A workflow tool's status poll (``squeue --noheader --format='%i %t' --job 15``) and a
    prefix naming one option's aliases (``--lic``: ``--license``/``--licenses``)."""
    argv = ["--noheader", "--format=%i %t", "--job", "15"]
    # "-u=x" is a line only argparse parses
    got = _fast(squeue, argv) if parse == "fast" else _argparse(squeue.build_parser(), [*argv, "-u=x"])
    assert got is not None
    assert (got["noheader"], got["format"], got["jobs"]) == (True, "%i %t", "15")
    assert sbatch.parse_args(["--lic", "a:1", "--wrap=true"]).licenses == "a:1"


def test_an_ambiguous_prefix_is_refused_in_getopt_long_s_words(capsys):
    with pytest.raises(SystemExit) as raised:
        squeue.parse_args(["--n", "x"])
    assert raised.value.code == 1
    assert capsys.readouterr().err == (
        "squeue: option '--n' is ambiguous; possibilities: '--noheader' '--name'\n"
        'Try "squeue --help" for more information\n'
    )


def test_words_after_the_batch_script_are_the_script_s_even_when_they_look_like_prefixes():
    ns = sbatch.parse_args(["job.sh", "--c=d", "--part=x", "--n"])
    assert (ns.script, ns.script_args, ns.partition) == ("job.sh", ["--c=d", "--part=x", "--n"], None)
    ns = vars(sbatch.build_parser().parse_args(["-pdebug", "job.sh", "--c=d"]))
    assert (ns["script_args"], ns["partition"]) == (["--c=d"], "debug")
