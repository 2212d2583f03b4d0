"""The ``plugin:`` section of resources.yaml (#17 point 1): its type and path checked when
the file is read, its hres/lua script loaded with the configuration (security check
included), the start refused when it cannot be, the last script kept on reconfigure."""

from __future__ import annotations

import logging
import shutil
import textwrap
from pathlib import Path

import pytest

from cluster.core.slurmconf import ConfigError
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from hres import lua_plugins
from hres.core.config import parse_resources

ROOT = Path(__file__).resolve().parents[2]

FUNCTIONS = "\n".join(f"function {name}(...) return slurm.SUCCESS end" for name in lua_plugins.REQUIRED)


def resources(path: str, *, kind: str = "hres/lua", extra: str = "") -> str:
    return textwrap.dedent(
        f"""\
        - resource: qpu
          mode: MODE_1
          plugin:
            type: {kind}
            config:
              - name: path
                value: {path}
            maintenance_cycle: 60
            maintenance_timeout: 10{extra}
          layers:
            - layer_name: qpu1
              nodes: ["node[01-02]"]
              count: 1
        """
    )


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_resources(text)
    return [str(p) for p in caught.value.problems]


def test_an_unknown_type_is_refused_naming_the_file_and_line():
    assert problems(resources("/etc/slurm/qpu.lua", kind="hres/python")) == [
        "resources.yaml:4: resource qpu: plugin type 'hres/python' is unknown (only hres/lua)"
    ]


def test_a_plugin_without_a_path_or_with_a_relative_one_is_refused():
    text = resources("/x.lua").replace("      - name: path\n        value: /x.lua\n", "      []\n")
    text = text.replace("config:\n      []", "config: []")
    assert problems(text) == [
        "resources.yaml:4: resource qpu: plugin config: missing 'path' (the hres/lua script)"
    ]
    assert problems(resources("qpu.lua")) == [
        "resources.yaml:6: resource qpu: plugin path 'qpu.lua' must be absolute"
    ]


def test_the_timers_must_be_seconds():
    text = resources("/x.lua").replace("maintenance_timeout: 10", "maintenance_timeout: soon")
    assert problems(text) == [
        "resources.yaml:9: resource qpu: "
        "plugin maintenance_timeout must be a non-negative number of seconds, not 'soon'"
    ]


@pytest.fixture
def conf(tmp_path, settings):
    target = tmp_path / "conf"
    shutil.copytree(ROOT / "examples" / "demo", target)
    settings.CONF_DIR = target
    lua_plugins.install(lua_plugins.Prepared({}, {}))
    yield target
    lua_plugins.install(lua_plugins.Prepared({}, {}))


def use(conf: Path, script_text: str | None, mode: int = 0o644) -> Path:
    script = conf / "qpu.lua"
    if script_text is not None:
        script.write_text(script_text)
        script.chmod(mode)
    (conf / "resources.yaml").write_text(resources(str(script)))
    return script


@pytest.mark.django_db
def test_a_loadable_script_is_kept_for_the_callbacks(conf):
    script = use(conf, FUNCTIONS + "\nfunction hres_validate_args(ctx, args) return slurm.ERROR end\n")
    config_load(path=conf / "slurm.conf")
    loaded = lua_plugins.controller_script("qpu")
    assert loaded is not None and loaded.path == script
    assert lua_plugins.plugin_conf("qpu").maintenance_cycle == 60
    assert lua_plugins.resources_with_plugins() == ("qpu",)
    # The attach point calls the script's functions.
    assert loaded.call("hres_validate_args", loaded.table({"name": "qpu"}), loaded.table({})).rc == -1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("text", "mode", "reason"),
    [
        (None, 0o644, "No such file or directory"),
        ("function hres_create_context(\n", 0o644, "qpu.lua:2: "),
        ("function hres_create_context() end\n", 0o644, "missing required function hres_destroy_context"),
        (FUNCTIONS, 0o666, "is writable by others (mode 0666): refused"),
    ],
)
def test_a_script_that_cannot_be_loaded_refuses_the_start(conf, text, mode, reason):
    script = use(conf, text, mode)
    with pytest.raises(ServiceError) as caught:
        config_load(path=conf / "slurm.conf")
    message = str(caught.value)
    assert f"resources.yaml:6: resource qpu: hres/lua: {script}: " in message
    assert reason in message
    assert lua_plugins.controller_script("qpu") is None


@pytest.mark.django_db
def test_a_script_in_a_directory_others_may_write_is_refused(conf):
    shared = conf / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    script = shared / "qpu.lua"
    script.write_text(FUNCTIONS)
    script.chmod(0o644)
    (conf / "resources.yaml").write_text(resources(str(script)))
    with pytest.raises(ServiceError, match=r"its directory .*/shared is writable by others \(mode 0777\)"):
        config_load(path=conf / "slurm.conf")


@pytest.mark.django_db
def test_a_reconfigure_keeps_the_last_script_that_loaded(conf, caplog):
    script = use(conf, FUNCTIONS + "\nfunction hres_validate_args() return 11 end\n")
    config_load(path=conf / "slurm.conf")
    script.write_text("function hres_validate_args( end\n")
    with caplog.at_level(logging.WARNING):
        config_load(path=conf / "slurm.conf")
    assert any("the script loaded before stays in use" in m for m in caplog.messages)
    kept = lua_plugins.controller_script("qpu")
    assert kept.call("hres_validate_args").rc == 11
    # Fixed, it is used at the next look.
    script.write_text(FUNCTIONS + "\nfunction hres_validate_args() return 12 end\n")
    assert lua_plugins.controller_script("qpu").call("hres_validate_args").rc == 12
