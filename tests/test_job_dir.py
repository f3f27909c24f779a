"""The job directory is the seed's construction, ``<job.output_path>/<gym_job_id>/<benchmark>``
(issue 17): its last part is the benchmark rendered, its parent a non-empty gym job id (the
``run_id`` attribute); outside ``job.output_path`` it is a warning; a character the collector's
config URI or the step's shell cannot take is refused with the reason, and every other one
reaches a collector that starts (the real binaries, below).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
import urllib.request
import warnings
from pathlib import Path

import pytest
import yaml
from support import helpers
from support.e2e_otlp import post_json
from support.otelcol import collector_binary

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import (
    OtelConfigWarning,
    SubmitConfigError,
    collector_step,
    render_collector_config,
    write_collector_config,
)


def _mapping(output_path: Path | str, **otel: object) -> dict:
    mapping = helpers.load_mapping(helpers.EXAMPLE)
    mapping["job"]["output_path"] = str(output_path)
    mapping["otel"].update(otel)
    return mapping


def _render(config: Path, job_dir: Path | str, benchmark: str = "aime25", *extra: str):
    return helpers.run_cli(
        "render",
        config,
        "--benchmark",
        benchmark,
        "--job-dir",
        job_dir,
        *extra,
        cwd=Path(config).parent,
        env=helpers.cli_env(OTEL_TOKEN="set"),
    )


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "submit.yaml"
    path.write_text(yaml.safe_dump(_mapping(tmp_path / "runs")), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("job_dir", "says"),
    [
        # The cases: another benchmark's folder, and no gym job id before it.
        ("runs/gid-1/gpqa_diamond", "must end in the benchmark being rendered (--benchmark"),
        ("aime25", "has no gym job id before the benchmark, so the run_id attribute"),
        ("runs/gid-1/aime25/", None),  # a trailing slash is the same folder: accepted
        ("runs/gid\n1/aime25", "contains the control character U+000A"),
        ("runs/gid\t1/aime25", "contains the control character U+0009"),
        ("runs/gid\u20281/aime25", "contains U+2028, which the collector's Prometheus receiver"),
        ("runs/gid\ufffe1/aime25", "contains U+FFFE, which the collector's Prometheus receiver"),
        ("runs/gid-1/../aime25", "must not contain '.' or '..' segments"),
    ],
    ids=[
        "other-benchmark",
        "no-gym-job-id",
        "trailing-slash",
        "newline",
        "tab",
        "line-separator",
        "noncharacter",
        "dot-dot",
    ],
)
def test_render_refuses_a_job_directory_of_another_shape(
    config: Path, tmp_path: Path, job_dir: str, says: str | None
) -> None:
    before = helpers.tree(tmp_path)
    target = f"{tmp_path}/{job_dir}" if job_dir != "aime25" else "/aime25"
    result = _render(config, target)
    if says is None:
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        return
    assert result.returncode == 1
    (line,) = helpers.error_lines(result.stderr)
    assert line.startswith("--job-dir: ") and says in line, line
    assert "gid" not in line and "gpqa" not in line, "the path itself is never echoed"
    assert helpers.tree(tmp_path) == before, "nothing written on error"


def test_run_id_is_the_parent_folder_name(config: Path, tmp_path: Path) -> None:
    result = _render(config, tmp_path / "runs" / "gym-0007" / "aime25", "aime25", "--stdout")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    attributes = yaml.safe_load(result.stdout)["processors"]["resource/job"]["attributes"]
    values = {a["key"]: a.get("value") for a in attributes}
    assert values["run_id"] == "gym-0007" and values["benchmark"] == "aime25"


def test_a_job_directory_outside_output_path_is_a_warning(config: Path, tmp_path: Path) -> None:
    job_dir = tmp_path / "elsewhere" / "gid-1" / "aime25"
    result = _render(config, job_dir)
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"{helpers.WARNING}--job-dir: ") and "outside job.output_path" in line
    assert (job_dir / "otel" / "collector.yaml").is_file()


def test_python_callers_get_the_warning_as_data(tmp_path: Path) -> None:
    config = SubmitConfig.from_dict(_mapping("/lustre/runs"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        render_collector_config(config, "aime25", "/scratch/gid-1/aime25")
        render_collector_config(config, "aime25", "/lustre/runs/gid-1/aime25")
    (warning,) = [w.message for w in caught if isinstance(w.message, OtelConfigWarning)]
    assert warning.violation.path == "remote_bench_dir"


def test_the_step_refuses_what_rendering_refuses() -> None:
    config = SubmitConfig.from_dict(_mapping("/lustre/runs"))
    with pytest.raises(SubmitConfigError) as caught:
        collector_step(config, "aime25", "/lustre/runs/gid-1/gpqa_diamond")
    assert caught.value.path == "remote_bench_dir"


def test_the_step_refuses_a_wildcard_where_rendering_does() -> None:
    """The scrape targets files' paths are patterns to the collector: the step, which writes
    them, refuses the job directory rendering refuses (it once printed a step for it)."""
    config = SubmitConfig.from_dict(_mapping("/lustre/runs"))
    for wildcard in "*?[\\":
        with pytest.raises(SubmitConfigError, match="wildcard") as caught:
            collector_step(config, "aime25", f"/lustre/runs/gid{wildcard}1/aime25")
        assert caught.value.path == "remote_bench_dir"


# -- the real binaries: every character that is not refused reaches a collector that starts -----

# Gym job ids a user could type: the config URI's ':', shell syntax, collector expansion syntax,
# quotes, braces, non-ASCII, a no-break and a zero-width space and a byte-order mark. (U+2028,
# U+2029, U+FFFE and U+FFFF break the Prometheus receiver's YAML: refused, above.)
# (Glob characters are refused where there is something to scrape: Prometheus reads the targets
# files' paths as patterns; tests/data/hostile/submit/c3-job-dir-glob.yaml.)
HOSTILE_IDS = [
    "run:1",
    "file:x y",
    'it\'s "q" $(touch PWNED) `touch PWNED2` ;|&<>',
    "${HOME} ${env:OTEL_TOKEN} $$ $1 %20 #x ,=",
    "{b} ~ a] !",  # '*', '?', '[' and '\\' are refused when there is something to scrape
    "é 😀 \u00a0\ufeff\u200b",
]
LISTEN_HOSTS = {"legacy": "127.0.0.61", "current": "127.0.0.62"}  # clash with nothing
SPAN = {
    "resourceSpans": [
        {
            "scopeSpans": [
                {
                    "spans": [
                        {
                            "traceId": "5b8efff798038103d269b633813fc60c",
                            "spanId": "eee19b7ec3c1b174",
                            "name": "hostile-folder",
                            "kind": 1,
                            "startTimeUnixNano": "1700000000000000000",
                            "endTimeUnixNano": "1700000001000000000",
                        }
                    ]
                }
            ]
        }
    ]
}


def _healthy(host: str, deadline: float) -> bool:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://{host}:13133/", timeout=1) as answer:
                if answer.status == 200:
                    return True
        except OSError:
            time.sleep(0.2)
    return False


@pytest.mark.collector
@pytest.mark.parametrize("line", sorted(LISTEN_HOSTS))
def test_hostile_job_directories_start_the_collector(line: str, tmp_path: Path) -> None:
    """The step's own command line, run by bash as the fragment runs it (each word quoted), on
    every hostile folder in turn: the collector reads its config and becomes healthy, and its
    files land in that folder."""
    binary = collector_binary(line)
    host = LISTEN_HOSTS[line]
    version = helpers.line_versions()[line]
    config = SubmitConfig.from_dict(
        _mapping(tmp_path / "runs", binary=str(binary), listen_host=host, collector_version=version)
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OTEL_TOKEN": "t", "SLURM_JOB_ID": "7"}
    for gym_job_id in HOSTILE_IDS:
        job_dir = tmp_path / "runs" / gym_job_id / "aime25"
        write_collector_config(config, "aime25", job_dir)
        step = collector_step(config, "aime25", job_dir)
        command = "exec " + " ".join(shlex.quote(word) for word in step.command)
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        traces = job_dir / "otel" / f"traces{helpers.FILE_SUFFIXES[line]}"
        try:
            healthy = _healthy(host, time.monotonic() + 30)
            if healthy:  # a span, so that even a rotating file exporter opens its file
                post_json(host, "traces", SPAN)
                deadline = time.monotonic() + 10
                while not traces.is_file() and time.monotonic() < deadline:
                    time.sleep(0.1)
        finally:
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=60)
        assert healthy, f"{gym_job_id!r}: {stderr[-2000:]}"
        assert process.returncode == 0, f"{gym_job_id!r}: {stderr[-2000:]}"
        assert traces.is_file(), gym_job_id
    assert not list(tmp_path.rglob("PWNED*")), "the shell ran nothing of the path"


@pytest.mark.parametrize(
    ("benchmark", "folder"), [("suite/aime25", "suite_aime25"), (".", "_."), ("..", "_..")]
)
def test_a_benchmark_name_that_is_no_folder_has_one(benchmark: str, folder: str) -> None:
    """``/``, ``.`` and ``..`` cannot be the last part of a path: the folder writes them so."""
    mapping = _mapping("/lustre/runs")
    mapping["driver"]["benchmarks"] = {benchmark: {}}
    config = SubmitConfig.from_dict(mapping)
    text = render_collector_config(config, benchmark, f"/lustre/runs/gid-1/{folder}")
    assert f'"{benchmark}"' in text
    with pytest.raises(SubmitConfigError):
        render_collector_config(config, benchmark, f"/lustre/runs/gid-1/{benchmark}-x")
