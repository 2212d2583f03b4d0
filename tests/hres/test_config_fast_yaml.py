"""resources.yaml parsed by libyaml (hres.core.config._FastLoader) gives what PyYAML's own
parser gives, with the lines the problems name; a file it refuses is reported with PyYAML's
messages, as before."""

from __future__ import annotations

import yaml

from bench.simulator_speed import write_conf
from hres.core import config
from hres.core.config import ConfigError, parse_resources


def _lines(value):
    """Every line a parsed value records, in document order."""
    out = []
    if isinstance(value, dict):
        out += [value.line, sorted(value.key_lines.items()), value.duplicates]
        for v in value.values():
            out += _lines(v)
    elif isinstance(value, list):
        out += [value.line, value.item_lines]
        for v in value:
            out += _lines(v)
    return out


def test_the_same_values_and_lines_as_pyyaml(tmp_path):
    write_conf(tmp_path, 200)
    texts = [
        (tmp_path / "resources.yaml").read_text(),
        "---\n- resource: a\n  mode: MODE_1\n  mode: MODE_2\n  layers: []\n- {resource: b, count: -1}\n",
        "x: [1, 2.5, '3', yes, null, 1:00:00]\n",
    ]
    assert config._FastLoader is not config._Loader
    for text in texts:
        fast = yaml.load(text, Loader=config._FastLoader)  # noqa: S506 - a SafeLoader
        slow = yaml.load(text, Loader=config._Loader)  # noqa: S506 - a SafeLoader
        assert fast == slow
        assert _lines(fast) == _lines(slow)


def test_a_file_libyaml_refuses_is_reported_in_pyyamls_words():
    text = "---\n- resource: flat\n  mode: MODE_2\n  layers:\n\t- layer_name: top\n"
    try:
        parse_resources(text)
    except ConfigError as exc:
        (problem,) = exc.problems
    assert str(problem) == (
        "resources.yaml:5: bad YAML: while scanning for the next token "
        "found character '\\t' that cannot start any token"
    )
