"""The CLI's own spellings: API timestamps, ``(null)``, field widths (cli/fmt.py).

Durations, sizes and hostlists are tested with slurmwords (tests/slurmwords).
"""

from __future__ import annotations

import pytest

from cli.fmt import Field, null, pad, parse_format, render, slurm_time


def test_timestamps_print_local_without_zone():
    assert slurm_time("2024-03-01T10:00:05Z") == "2024-03-01T10:00:05"
    assert slurm_time("2024-03-01T10:00:05+00:00") == "2024-03-01T10:00:05"
    assert slurm_time(None) == "N/A"
    assert slurm_time("", "Unknown") == "Unknown"
    assert slurm_time("2024-03-01T10:00:05") == "2024-03-01T10:00:05"  # no zone: UTC
    assert slurm_time("not a time") == "not a time"


def test_unset_strings_print_null():
    assert null(None) == "(null)"
    assert null("") == "(null)"
    assert null([]) == "(null)"
    assert null(0) == "0"
    assert null(None, "N/A") == "N/A"


def test_format_spec_parsing():
    assert parse_format("%.18i %-10j%5P|%%%#N") == [
        Field("i", 18, True),
        " ",
        Field("j", 10, False),
        Field("P", 5, False),
        "|%",
        Field("N", 0, False, auto=True),
    ]
    with pytest.raises(ValueError):
        parse_format("%.18")


def test_padding_justifies_and_cuts_like_slurm():
    assert pad("wrap", 8, right=True) == "    wrap"
    assert pad("wrap", 8) == "wrap    "
    assert pad("a_very_long_name", 8, right=True) == "a_very_l"
    assert pad("a_very_long_name", 8) == "a_very_l"
    assert pad("NODELIST", 4, cut=False) == "NODELIST"
    assert pad("x", 0) == "x"


def test_render_a_line():
    tokens = parse_format("%.5i|%-4j|")
    values = {"i": "12", "j": "jobname"}
    assert render(tokens, lambda f: values[f.kind]) == "   12|jobn|"


def test_an_option_s_value_may_start_with_a_dash_as_getopt_reads_it():
    from cli import sbatch, squeue

    # squeue -S -p: sort by priority, descending (argparse alone: "expected one argument").
    for argv in (["-S", "-p"], ["--sort", "-p"], ["--so", "-p"], ["-S-p"], ["--sort=-p"]):
        assert squeue.build_parser().parse_args(argv).sort == "-p", argv
    # After the batch script every word is the script's, untouched.
    ns = sbatch.build_parser().parse_args(["-J", "-x", "job.sh", "-S", "-p", "--", "-q"])
    assert (ns.job_name, ns.script, ns.script_args) == ("-x", "job.sh", ["-S", "-p", "--", "-q"])
    # A flag is not given the next word.
    assert squeue.build_parser().parse_args(["-h", "-r"]).array is True


def test_short_options_are_refused_in_getopt_s_words(capsys):
    """glibc getopt, which Slurm's commands use: an unknown short option, alone or after a
    flag it is clustered with (``sprio -nP``), is "invalid option -- 'P'" (argparse said
    "ignored explicit argument 'P'" or "unrecognized option '-x'")."""
    import pytest

    from cli.main import main

    for argv, letter in ((["sprio", "-nP"], "P"), (["sinfo", "-x"], "x"), (["squeue", "-hZ"], "Z")):
        with pytest.raises(SystemExit) as stop:
            main(["fsched", *argv])
        assert stop.value.code == 1
        assert capsys.readouterr().err == (
            f"{argv[0]}: invalid option -- '{letter}'\nTry \"{argv[0]} --help\" for more information\n"
        )
