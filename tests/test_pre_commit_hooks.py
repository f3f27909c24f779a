"""The repository's pre-commit hooks, run by pre-commit on a template repository of a platform team.

``pre-commit try-repo`` installs this repository (its working tree) into a hook environment,
as a template repository's ``.pre-commit-config.yaml`` would, and runs a hook on a temporary
git repository holding an override or collector YAML files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import helpers

pytestmark = pytest.mark.slow

PRE_COMMIT = [sys.executable, "-m", "pre_commit"]
FRONT_MATTER = "{#- nemo-gym-otel\ntemplate_version: 1\nrequires_package: 0.1.0\n-#}\n"
EXTENDS = '{% extends "builtin/current/otlp_http+file.yaml.j2" %}\n'


@pytest.fixture(scope="module")
def hook_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit cache for the module: the hook environment is built once."""
    if shutil.which("git") is None:
        message = "git is not on PATH; pre-commit needs it"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return tmp_path_factory.mktemp("pre-commit-home")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)


def _repository(root: Path, files: dict[str, str]) -> Path:
    repo = root / "templates-repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    _git(repo, "add", ".")
    return repo


def _run_hook(repo: Path, hook: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **helpers.cli_env(),
        "PRE_COMMIT_HOME": str(home),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return subprocess.run(
        [*PRE_COMMIT, "try-repo", str(helpers.REPO), hook, "--all-files", "--verbose"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_the_check_hook_passes_a_good_override_and_fails_a_broken_one(
    tmp_path: Path, hook_home: Path
) -> None:
    good = (
        FRONT_MATTER
        + EXTENDS
        + "{% block telemetry %}\n    logs:\n      level: info\n    metrics:\n      level: none\n"
        + "{% endblock %}\n"
    )
    repo = _repository(tmp_path, {"templates/current/otlp_http+file.yaml.j2": good})
    passed = _run_hook(repo, "nemo-gym-otel-check", hook_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "ok bundled example: current/otlp_http+file (override " in passed.stdout
    broken = (
        FRONT_MATTER
        + EXTENDS
        + (
            "{% block pipelines %}\n    traces/ingest:\n      receivers: [otlp]\n"
            "      exporters: [nowhere]\n{% endblock %}\n"
        )
    )
    (repo / "templates/current/otlp_http+file.yaml.j2").write_text(broken, encoding="utf-8")
    _git(repo, "add", ".")
    failed = _run_hook(repo, "nemo-gym-otel-check", hook_home)
    assert failed.returncode == 1
    assert (
        "service.pipelines.traces/ingest.exporters.nowhere: 'nowhere' is not defined"
        in failed.stdout
    )


def test_the_validate_hook_names_the_invalid_file(tmp_path: Path, hook_home: Path) -> None:
    rendered = helpers.rendered_example(tmp_path)
    bad = rendered.replace("batch:\n", "batch:\n    send_batch_size: lots\n", 1)
    repo = _repository(tmp_path, {"good.yaml": rendered, "configs/bad.yaml": bad})
    result = _run_hook(repo, "nemo-gym-otel-validate", hook_home)
    assert result.returncode == 1
    assert "good.yaml: valid" in result.stdout
    assert "processors.batch.send_batch_size: must be an integer" in result.stdout
