"""One ``--format {text,json}`` on every command that prints results (issue 20).

``graph`` prints a picture and ``render`` a path or the YAML itself, so they have none. The
``--json`` flag of earlier releases stays, hidden from the help, as the alias scripts used.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import helpers

JOB_DIR = "/lustre/fsw/portfolios/llm/users/gym/runs/gym-20261202-0001/aime25"
COMMANDS = {
    "validate": lambda example, rendered: ["validate", rendered],
    "check": lambda example, rendered: ["check"],
    "templates": lambda example, rendered: ["templates"],
    "env": lambda example, rendered: ["env", example, "--gym-job-id", "gym-1"],
    "step": lambda example, rendered: [
        "step",
        example,
        "--benchmark",
        "aime25",
        "--job-dir",
        JOB_DIR,
    ],
}


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    path = tmp_path / "collector.yaml"
    path.write_text(helpers.rendered_example(tmp_path), encoding="utf-8")
    return path


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_result_printing_command_takes_format(
    command: str, rendered: Path, tmp_path: Path
) -> None:
    args = COMMANDS[command](helpers.EXAMPLE, rendered)
    env = helpers.cli_env(WANDB_API_KEY="set-for-env")  # the example's driver.env reads it
    text = helpers.run_cli(*args, "--format", "text", cwd=tmp_path, env=env)
    as_json = helpers.run_cli(*args, "--format", "json", cwd=tmp_path, env=env)
    alias = helpers.run_cli(*args, "--json", cwd=tmp_path, env=env)
    assert text.returncode == as_json.returncode == alias.returncode == 0, as_json.stderr
    with pytest.raises(json.JSONDecodeError):
        json.loads(text.stdout)
    assert json.loads(as_json.stdout) == json.loads(alias.stdout)
    usage = helpers.run_cli(*args, "--format", "xml", cwd=tmp_path, env=env)
    assert usage.returncode == 2 and "--format" in usage.stderr
    assert "--json" not in helpers.run_cli(args[0], "--help", cwd=tmp_path).stdout


def test_report_takes_format(tmp_path: Path) -> None:
    """``report`` of a job directory whose collector left nothing: the same verdict and exit
    code either way; only the shape of the output changes."""
    job = tmp_path / "job"
    (job / "otel").mkdir(parents=True)
    text = helpers.run_cli("report", job, "--format", "text", cwd=tmp_path)
    as_json = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    verdict = json.loads(as_json.stdout)["verdict"]
    exit_code = {"complete": 0, "incomplete": 1, "cannot be told": 3}[verdict]
    assert text.returncode == as_json.returncode == exit_code
    assert text.stdout.startswith("signal") and verdict in text.stdout
