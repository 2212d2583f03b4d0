"""The dump's line syntax, shared by `sacctmgr load` and the What-if form."""

from __future__ import annotations

from limits.core import dump_syntax


def test_a_colon_inside_quotes_belongs_to_its_value():
    text = "Description='a: b':GrpTRES=cpu=8::MaxJobs=4"
    assert dump_syntax.split_options(text) == ["Description=a: b", "GrpTRES=cpu=8", "MaxJobs=4"]


def test_quotes_can_be_kept_for_rewriting_the_line_as_written():
    text = "Description='a: b':MaxJobs=4"
    assert dump_syntax.split_options(text, keep_quotes=True) == ["Description='a: b'", "MaxJobs=4"]


def test_the_line_names_its_kind_and_quoted_name():
    m = dump_syntax.LINE.match("QOS - 'normal':MaxWall=60")
    assert m is not None and m.groups() == ("QOS", "normal", "MaxWall=60")
    assert dump_syntax.LINE.match("Account - 'physics'").groups() == ("Account", "physics", None)
    assert dump_syntax.LINE.match("Frobnicate - 'x'") is None
