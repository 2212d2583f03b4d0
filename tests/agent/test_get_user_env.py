"""sbatch --get-user-env on the agent (#16 point 6): the job's environment starts from
what the user's login shell sets up, and the submitted variables win over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import user_env
from agent.jobs import Account
from slurmwords.job_options import parse_get_user_env
from tests.agent.harness import ME


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home whose login profile exports two variables and prints a greeting."""
    (tmp_path / ".bash_profile").write_text(
        'echo "welcome"\nexport FROM_LOGIN=profile\nexport SHARED=login\n'
    )
    (tmp_path / ".profile").write_text("export FROM_LOGIN=profile\nexport SHARED=login\n")
    return tmp_path


def test_parse_get_user_env():
    assert parse_get_user_env("") == (8, "L")
    assert parse_get_user_env("20") == (20, "L")
    assert parse_get_user_env("5s") == (5, "S")
    with pytest.raises(ValueError, match="Invalid --get-user-env specification: x"):
        parse_get_user_env("x")


def test_the_login_environment_is_under_the_submitted_one(home: Path):
    account = Account(name=ME, home=str(home))
    launch = {"get_user_env": "8L"}
    env = user_env.merged(launch, account, {"SHARED": "submitted", "SLURM_JOB_ID": "4"})
    assert env["FROM_LOGIN"] == "profile"  # what only the login profile sets
    assert env["SHARED"] == "submitted"  # the submission wins, as sbatch(1) says
    assert env["SLURM_JOB_ID"] == "4"
    assert env["HOME"] == str(home)
    assert "welcome" not in "".join(env.values())  # the profile's output is not read as env


def test_a_plain_shell_reads_no_profile(home: Path):
    env = user_env.merged({"get_user_env": "8S"}, Account(name=ME, home=str(home)), {})
    assert "FROM_LOGIN" not in env and env["HOME"] == str(home)


def test_without_the_option_nothing_changes(home: Path):
    env = {"A": "1"}
    assert user_env.merged({"get_user_env": None}, Account(name=ME, home=str(home)), env) is env
