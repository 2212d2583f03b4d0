"""The guides in docs/ stay true: every ``fsched`` command and option they show exists, and
every link between docs reaches a file and a heading that exist."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from cli.main import COMMANDS, main
from guides.markdown_lite import headings, slug

ROOT = Path(__file__).resolve().parents[2]
GUIDES = [ROOT / "docs" / "user-guide.md", ROOT / "docs" / "admin-guide.md"]
# `fsched` as a command (at the start, after a blank or a bin/), not a path or database name.
FSCHED = re.compile(r"(?:^|\s|bin/)fsched\s+([a-z][a-z_]*)(?=\s|$)(.*)")
LINK = re.compile(r"\[[^\]]+\]\(([^)\s]+)\)")


def code_lines(text: str) -> list[str]:
    """The code of a doc: code spans, indented and fenced blocks, continuation lines joined."""
    lines: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            if lines and lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1] + " " + line.strip()
            else:
                lines.append(line.strip())
        else:
            lines.extend(re.findall(r"`([^`]+)`", line))
    return lines


def commands_shown(path: Path) -> list[tuple[str, list[str]]]:
    """Each ``fsched <command> <words>`` of the doc's code, split as the shell would."""
    shown = []
    for line in code_lines(path.read_text(encoding="utf-8")):
        m = FSCHED.search(line)
        if m:
            shown.append((m.group(1), shlex.split(m.group(2), comments=True)))
    return shown


def help_text(command: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        main(["fsched", command, "--help"])
    return out.getvalue() + err.getvalue()


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_every_fsched_command_in_a_guide_exists(guide):
    shown = commands_shown(guide)
    assert len(shown) >= 10, f"{guide.name} shows few fsched commands: {shown}"
    unknown = sorted({cmd for cmd, _ in shown if cmd not in COMMANDS})
    assert not unknown, f"{guide.name} names fsched commands that cli/main.py does not have: {unknown}"


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_every_option_in_a_guide_is_in_the_commands_help(guide):
    helps: dict[str, str] = {}
    missing = []
    for cmd, words in commands_shown(guide):
        if cmd not in COMMANDS:
            continue
        text = helps.setdefault(cmd, help_text(cmd))
        for word in words:
            if not re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", word):
                continue
            option = word.split("=", 1)[0]
            if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text):
                missing.append(f"fsched {cmd} {option}")
    assert not missing, f"{guide.name} shows options the commands do not have: {missing}"


def test_the_command_check_sees_a_command_that_does_not_exist(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("Run `fsched sfoo -x` or\n\n    fsched squeue --me   # yours\n", encoding="utf-8")
    assert commands_shown(doc) == [("sfoo", ["-x"]), ("squeue", ["--me"])]
    assert "sfoo" not in COMMANDS


def _links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    code = set(code_lines(text))
    return [t for line in text.splitlines() if line.strip() not in code for t in LINK.findall(line)]


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_links_between_docs_resolve(guide):
    targets = [t for t in _links(guide) if not t.startswith(("http://", "https://"))]
    assert targets, f"{guide.name} links to no other doc"
    broken = []
    for target in targets:
        file, _, anchor = target.partition("#")
        path = (guide.parent / file).resolve() if file else guide
        if not path.is_file():
            broken.append(f"{target}: no file {path}")
        elif anchor and anchor not in {slug(text) for _, text in headings(path.read_text(encoding="utf-8"))}:
            broken.append(f"{target}: no heading #{anchor} in {path.name}")
    assert not broken, f"{guide.name} has broken links: {broken}"


def test_the_guides_are_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/user-guide.md" in readme and "docs/admin-guide.md" in readme
