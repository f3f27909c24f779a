"""The collector's job step as data and as a bash fragment (issue 8).

These tests cover what needs no cluster: the step's description, the quoting of every value that
lands in the fragment, and the start's refusals that happen before anything reaches Slurm. The
whole life of the step (health wait, TERM through scancel, exit status) is proven on a real Slurm
cluster in ``tests/slurm/``.
"""

from __future__ import annotations

import copy
import http.server
import json
import os
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from support import helpers

from nemo_gym.orchestration.executors.otel import (
    COLLECTOR_HEALTH_PORT,
    COLLECTOR_SERVICE_NAME,
    FINAL_SCRAPE_GRACE_SECONDS,
    SHUTDOWN_WAIT_SECONDS,
    OtelConfigWarning,
    SubmitConfig,
    SubmitConfigError,
    collector_step,
    collector_step_script,
    write_collector_config,
)

JOB_DIR = "/lustre/runs/gym-0001/aime25"
HOSTILE_JOB_DIR = '/tmp/it\'s a "job" $(touch PWNED) `touch PWNED2` ${HOME} ;|&/gym-1/aime25'


# The bundled example's two pools as a heterogeneous job's batch script sees them.
EXAMPLE_JOB = {
    "SLURM_HET_SIZE": "2",
    "SLURM_JOB_NODELIST_HET_GROUP_0": "node1",
    "SLURM_JOB_NODELIST_HET_GROUP_1": "node2",
    "SLURMD_NODENAME": "node1",
}


def _config(mapping: dict, **otel: object) -> SubmitConfig:
    changed = copy.deepcopy(mapping)
    changed["otel"].update(otel)
    return SubmitConfig.from_dict(changed)


def test_step_describes_the_srun_step(example_mapping: dict) -> None:
    config = _config(example_mapping, health_check_timeout_seconds=77, binary="/opt/otel/otelcol")
    step = collector_step(config, "aime25", JOB_DIR)
    assert step.name == COLLECTOR_SERVICE_NAME == "otel_collector"
    assert step.srun_options == (
        "--overlap",
        "--nodes=1",
        "--ntasks=1",
        "--job-name=otel_collector",
        "--export=ALL",
    )
    assert step.command == (
        "/opt/otel/otelcol",
        f"--config=file:{JOB_DIR}/otel/collector.yaml",
        "--feature-gates=exporter.file.nativeCompression",  # the current line's zstd files
    )
    assert step.srun_command == ("srun", *step.srun_options, *step.command)
    assert str(step.log_path) == f"{JOB_DIR}/otel/collector.log"
    assert step.env_names == ("OTEL_TOKEN", "SLURM_JOB_ID")
    assert step.health_url == f"http://localhost:{COLLECTOR_HEALTH_PORT}/"
    assert (step.health_timeout_seconds, step.grace_seconds, step.shutdown_wait_seconds) == (
        77,
        FINAL_SCRAPE_GRACE_SECONDS,
        SHUTDOWN_WAIT_SECONDS,
    )
    with pytest.raises(AttributeError):
        step.name = "other"  # type: ignore[misc]


def test_step_names_only_the_variables_its_config_expands(example_mapping: dict) -> None:
    files_only = _config(example_mapping, exporters=["file"], token_env="ACME_INGEST")
    assert collector_step(files_only, "aime25", JOB_DIR).env_names == ("SLURM_JOB_ID",)
    backend = _config(example_mapping, token_env="ACME_INGEST")
    assert collector_step(backend, "aime25", JOB_DIR).env_names == ("ACME_INGEST", "SLURM_JOB_ID")


def test_step_in_a_container_mounts_the_job_directory(example_mapping: dict) -> None:
    config = _config(example_mapping, container="nvcr.io/acme/otelcol:0.161.0")
    options = collector_step(config, "aime25", JOB_DIR).srun_options
    assert "--container-image=nvcr.io/acme/otelcol:0.161.0" in options
    assert f"--container-mounts={JOB_DIR}" in options


def test_health_url_brackets_an_ipv6_listen_host(example_mapping: dict) -> None:
    step = collector_step(_config(example_mapping, listen_host="fd00::5"), "aime25", JOB_DIR)
    assert step.health_url == f"http://[fd00::5]:{COLLECTOR_HEALTH_PORT}/"
    assert step.health_host == "fd00::5"


def test_step_refuses_what_rendering_refuses(example_mapping: dict) -> None:
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(SubmitConfigError) as unknown:
        collector_step(config, "not-a-benchmark", JOB_DIR)
    assert unknown.value.path == "benchmark_name"
    with pytest.raises(SubmitConfigError) as relative:
        collector_step_script(config, "aime25", "runs/gym-0001/aime25")
    assert relative.value.path == "remote_bench_dir"


def _bash(script: str, *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def _stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/bash\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_fragment_passes_hostile_paths_as_single_words(
    example_mapping: dict, tmp_path: Path
) -> None:
    """Quoting, checked by running the fragment: a stand-in ``srun`` records its arguments.

    A stub is enough here (this is the fragment's quoting, a pure function of the config); the
    real srun runs the fragment in tests/slurm/.
    """
    job_dir = tmp_path / HOSTILE_JOB_DIR.lstrip("/")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stub(bin_dir, "otelcol-contrib", "exit 0")
    _stub(
        bin_dir,
        "srun",
        f'printf "%s\\n" "$@" > {tmp_path}/srun-args\n'
        'echo "Error: invalid configuration: no_such_section"\n'
        'echo "srun: error: node1: task 0: Exited with exit code 3" >&2\nexit 3',
    )
    # An address of its own, so that no collector of another test answers the health check.
    config = _config(
        example_mapping, binary=str(bin_dir / "otelcol-contrib"), listen_host="127.0.0.243"
    )
    with pytest.warns(OtelConfigWarning):  # the job directory is outside job.output_path
        write_collector_config(config, "aime25", job_dir)
    (job_dir / "otel" / "traces.jsonl.zst").write_bytes(b"an earlier attempt's stream")
    fragment = collector_step_script(config, "aime25", job_dir)
    env = helpers.cli_env(
        PATH=f"{bin_dir}:{os.environ['PATH']}", SLURM_JOB_ID="7", OTEL_TOKEN="t0k3n", **EXAMPLE_JOB
    )
    result = _bash(
        f"set -euo pipefail\n{fragment}\notel_collector_start || echo rc=$?", cwd=tmp_path, env=env
    )
    assert "rc=1" in result.stdout
    # The sender (the backend path behind the disk queue) is the first step the start runs.
    assert result.stderr.strip().endswith(
        "the sender exited (status 3) before its receiver answered; "
        f"{job_dir}/otel/collector.log: Error: invalid configuration: no_such_section"
    ), result.stderr
    args = (tmp_path / "srun-args").read_text(encoding="utf-8").splitlines()
    assert args[-2:] == [
        str(bin_dir / "otelcol-contrib"),
        f"--config=file:{job_dir}/otel/sender.yaml",
    ]
    options = collector_step(config, "aime25", job_dir).srun_options
    assert args[:-2] == [
        "--job-name=otel_collector_sender" if o.startswith("--job-name=") else o for o in options
    ]
    assert not list(tmp_path.rglob("PWNED*"))
    assert (job_dir / "otel" / "collector.log").exists()
    # Set aside before srun ran, under the hostile path too (see _step/fresh_files.py).
    (aside,) = (job_dir / "otel").glob("traces.jsonl-*-restart.zst")
    assert aside.read_bytes() == b"an earlier attempt's stream"


def test_fragment_never_holds_the_token(
    example_mapping: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TOKEN", "s3cr3t-ingest-token")
    fragment = collector_step_script(SubmitConfig.from_dict(example_mapping), "aime25", JOB_DIR)
    assert "s3cr3t-ingest-token" not in fragment
    assert '"${OTEL_TOKEN:-}"' in fragment  # read from the job's environment at start


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("token", "otel_collector_start: OTEL_TOKEN is not set or empty"),
        ("binary", "otel_collector_start: collector binary not found"),
        ("config", "does not exist; write it first"),
        ("job", "otel_collector_start: SLURM_JOB_ID is not set"),
    ],
)
def test_start_refuses_before_reaching_slurm(
    example_mapping: dict, tmp_path: Path, missing: str, message: str
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stub(bin_dir, "srun", f"touch {tmp_path}/srun-ran")
    if missing != "binary":
        _stub(bin_dir, "otelcol-contrib", "exit 0")
    job_dir = tmp_path / "runs" / "gym-1" / "aime25"
    (job_dir / "otel").mkdir(parents=True)
    if missing != "config":
        (job_dir / "otel" / "collector.yaml").write_text("{}\n", encoding="utf-8")
    config = _config(example_mapping, binary="otelcol-contrib")
    env = helpers.cli_env(
        PATH=f"{bin_dir}:/usr/bin:/bin",
        SLURM_JOB_ID=None if missing == "job" else "7",
        OTEL_TOKEN="" if missing == "token" else "t0k3n",
    )
    fragment = collector_step_script(config, "aime25", job_dir)
    result = _bash(f"set -eu\n{fragment}\notel_collector_start", cwd=tmp_path, env=env)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert not (tmp_path / "srun-ran").exists()


def test_stop_without_start_says_so(example_mapping: dict, tmp_path: Path) -> None:
    fragment = collector_step_script(SubmitConfig.from_dict(example_mapping), "aime25", JOB_DIR)
    result = _bash(f"set -eu\n{fragment}\notel_collector_stop", cwd=tmp_path, env=helpers.cli_env())
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "otel_collector_stop: no collector was started by otel_collector_start"
    )


def test_cli_step_prints_the_fragment_and_the_json(tmp_path: Path) -> None:
    repo = helpers.REPO
    example = repo / "examples" / "submit.yaml"
    script = helpers.run_cli(
        "step", example, "--benchmark", "aime25", "--job-dir", JOB_DIR, cwd=tmp_path
    )
    assert script.returncode == 0, script.stderr
    assert script.stdout == collector_step_script(
        SubmitConfig.from_yaml(example), "aime25", JOB_DIR
    )
    assert subprocess.run(["bash", "-n"], input=script.stdout, text=True).returncode == 0
    as_json = helpers.run_cli(
        "step",
        example,
        "--benchmark",
        "aime25",
        "--job-dir",
        JOB_DIR,
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["name"] == "otel_collector"
    assert data["srun_command"][0] == "srun"
    assert data["env_names"] == ["OTEL_TOKEN", "SLURM_JOB_ID"]
    assert data["log_path"] == f"{JOB_DIR}/otel/collector.log"


def test_cli_step_names_the_flag_it_refuses(tmp_path: Path) -> None:
    example = helpers.EXAMPLE
    result = helpers.run_cli(
        "step", example, "--benchmark", "nope", "--job-dir", JOB_DIR, cwd=tmp_path
    )
    assert result.returncode == 1
    assert helpers.error_lines(result.stderr)[0].startswith("--benchmark: ")
    relative = helpers.run_cli(
        "step", example, "--benchmark", "aime25", "--job-dir", "rel", cwd=tmp_path
    )
    assert relative.returncode == 1
    assert helpers.error_lines(relative.stderr)[0].startswith("--job-dir: ")
    assert list(tmp_path.iterdir()) == []


def _written_job(
    example_mapping: dict, tmp_path: Path, listen_host: str
) -> tuple[Path, SubmitConfig, dict[str, str]]:
    """A job directory written by the package for the example with a stand-in collector on
    ``listen_host``, and the environment of a start whose ``srun`` only marks that it ran."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stub(bin_dir, "srun", f"touch {tmp_path}/srun-ran")
    _stub(bin_dir, "otelcol-contrib", "exit 0")
    job_dir = tmp_path / "runs" / "gym-1" / "aime25"
    config = _config(example_mapping, binary="otelcol-contrib", listen_host=listen_host)
    with pytest.warns(OtelConfigWarning):  # the job directory is outside job.output_path
        write_collector_config(config, "aime25", job_dir)
    env = helpers.cli_env(
        PATH=f"{bin_dir}:/usr/bin:/bin", SLURM_JOB_ID="7", OTEL_TOKEN="t0k3n", **EXAMPLE_JOB
    )
    return job_dir, config, env


def test_start_refuses_a_health_port_that_already_answers(
    example_mapping: dict, tmp_path: Path
) -> None:
    """Two collectors on one node: the second must not mistake the first's health for its own."""

    class Healthy(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.244", COLLECTOR_HEALTH_PORT), Healthy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        job_dir, config, env = _written_job(example_mapping, tmp_path, "127.0.0.244")
        fragment = collector_step_script(config, "aime25", job_dir)
        result = _bash(f"set -eu\n{fragment}\notel_collector_start", cwd=tmp_path, env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 1
    assert "something already answers on 127.0.0.244:13133" in result.stderr
    assert not (tmp_path / "srun-ran").exists()


# The last log lines of a collector whose only failure was the delivery report's push at
# shutdown, as the two lines print them (read from runs of the real binaries), and look-alikes
# that must still fail the stop.
_LOST = (
    "failed to shutdown service after error: failed to shutdown meter provider: failed to upload "
    'metrics: Post "http://{host}:4318/v1/metrics": dial tcp 127.0.0.1:4318: connect: connection '
    "refused"
)


@pytest.mark.parametrize(
    ("last_line", "report", "tolerated"),
    [
        ("Error: " + _LOST.format(host="localhost"), True, True),
        (
            "2026/12/03 18:49:10 collector server run finished with error: "
            + _LOST.format(host="localhost"),
            True,
            True,
        ),
        (
            "Error: "
            + _LOST.format(host="localhost").replace(
                "dial tcp 127.0.0.1:4318: connect: connection refused",
                "write tcp 127.0.0.1:40112->127.0.0.1:4318: write: broken pipe",
            ),
            True,
            True,
        ),
        (
            "Error: "
            + _LOST.format(host="localhost").replace(
                "connect: connection refused", "connect: no route to host"
            ),
            True,
            False,
        ),
        ("Error: " + _LOST.format(host="localhost"), False, False),  # no report: a real failure
        # The stop's drain pushes to its own receiver (4320), never to the job's port.
        ("Error: " + _LOST.format(host="localhost").replace("4318", "4320"), True, True),
        ("Error: " + _LOST.format(host="localhost").replace("4318", "4321"), True, False),
        ("Error: " + _LOST.format(host="10.0.0.9"), True, False),  # not its own receiver
        (
            "Error: failed to shutdown service after error: failed to shutdown pipelines: x; "
            + _LOST.format(host="localhost").removeprefix(
                "failed to shutdown service after error: "
            ),
            True,
            False,
        ),
        ("Error: " + _LOST.format(host="localhost") + "; and another", True, False),
        ("Error: cannot start pipelines: listen tcp 127.0.0.1:4318: bind", True, False),
    ],
)
def test_stop_forgives_only_the_lost_last_reading(
    example_mapping: dict, tmp_path: Path, last_line: str, report: bool, tolerated: bool
) -> None:
    """The check the stop makes after the collector exited 1, on the log's last line (srun's
    own line after it skipped)."""
    job_dir = tmp_path / "runs/gym-1/aime25"
    log = job_dir / "otel" / "collector.log"
    log.parent.mkdir(parents=True)
    log.write_text(
        f"info starting\n{last_line}\nsrun: error: node1: task 0: Exited with exit code 1\n",
        encoding="utf-8",
    )
    config = _config(example_mapping, delivery_report=report)
    fragment = collector_step_script(config, "aime25", job_dir)
    result = _bash(
        f"{fragment}\n_otel_collector_only_last_reading_lost", cwd=tmp_path, env=helpers.cli_env()
    )
    assert (result.returncode == 0) is tolerated, result.stderr


def test_the_step_is_rendered_from_the_builtin_templates_only(
    example_mapping: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An override path in effect changes the collector config, never the step's bash (the
    step's templates are not part of the override rule; one named like them is refused)."""
    config = SubmitConfig.from_dict(example_mapping)
    builtin = collector_step_script(config, "aime25", JOB_DIR)
    overrides = tmp_path / "overrides"
    (overrides / "_step").mkdir(parents=True)
    (overrides / "_step" / "collector_step.sh.j2").write_text("echo replaced\n", encoding="utf-8")
    (overrides / "_step" / "drain.sh.j2").write_text("echo replaced\n", encoding="utf-8")
    monkeypatch.setenv("NEMO_GYM_OTEL_TEMPLATE_PATH", str(overrides))
    assert collector_step_script(config, "aime25", JOB_DIR) == builtin
    assert "echo replaced" not in builtin
    result = helpers.run_cli("check", "--template-dir", overrides, cwd=tmp_path)
    assert result.returncode == 1
    assert "_step/collector_step.sh.j2: is the job step's bash" in result.stderr, result.stderr


def _break_drain_missing(otel_dir: Path) -> None:
    (otel_dir / "drain.yaml").unlink()


def _mark_of_another_rendering(path: Path) -> None:
    lines = path.read_text("utf-8").splitlines(keepends=True)
    path.write_text(
        "".join(lines[:-1]) + "# nemo-gym-otel files 0000000000000000 with drain.yaml\n"
    )


def _break_drain_of_another_rendering(otel_dir: Path) -> None:
    _mark_of_another_rendering(otel_dir / "drain.yaml")


def _break_ingest_missing(otel_dir: Path) -> None:
    (otel_dir / "ingest.yaml").unlink()


def _break_sender_of_another_rendering(otel_dir: Path) -> None:
    _mark_of_another_rendering(otel_dir / "sender.yaml")


def _break_mark_cut(otel_dir: Path) -> None:
    config = otel_dir / "collector.yaml"
    config.write_text("".join(config.read_text("utf-8").splitlines(keepends=True)[:-1]))


def _break_stale_drain(otel_dir: Path) -> None:
    """collector.yaml of a rendering without a disk queue beside an earlier drain.yaml."""
    config = otel_dir / "collector.yaml"
    text = config.read_text("utf-8").replace(" with drain.yaml\n", " without drain.yaml\n")
    config.write_text(text)


@pytest.mark.parametrize(
    "breaking",
    [
        None,
        _break_drain_missing,
        _break_drain_of_another_rendering,
        _break_mark_cut,
        _break_stale_drain,
        _break_ingest_missing,
        _break_sender_of_another_rendering,
    ],
    ids=[
        "written-together",
        "drain-missing",
        "drain-of-another",
        "mark-cut",
        "stale-drain",
        "ingest-missing",
        "sender-of-another",
    ],
)
def test_start_runs_only_a_pair_written_together(
    example_mapping: dict, tmp_path: Path, breaking: object
) -> None:
    """collector.yaml names its drain.yaml in its last line: a pair that a crash between the two
    renames (or a hand edit) broke is refused before srun, in one line; a whole pair goes on."""
    job_dir, config, env = _written_job(example_mapping, tmp_path, "127.0.0.245")
    if callable(breaking):
        breaking(job_dir / "otel")
    fragment = collector_step_script(config, "aime25", job_dir)
    result = _bash(f"set -eu\n{fragment}\notel_collector_start", cwd=tmp_path, env=env)
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line]
    assert len(lines) == 1, result.stderr
    if breaking is None:  # the check passed: srun ran (the stub exits at once)
        assert (tmp_path / "srun-ran").exists(), result.stderr
        assert "the sender exited (status 0) before its receiver answered" in lines[0], lines[0]
    else:
        assert "were not written together" in lines[0], lines[0]
        assert not (tmp_path / "srun-ran").exists()
