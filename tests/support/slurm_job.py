"""One benchmark job on the real Slurm cluster, from the rendered config to the stopped collector.

``run_slurm_job`` renders ``<job dir>/otel/collector.yaml`` with the package (as the executor
does, before the job starts), writes the package's ``collector_step_script`` and the batch
script around it (``slurm_script.py``), submits the job with the token in the submitting
environment only, watches it until it ends (``slurm_cluster.py``) and gathers what it left: the
recorded statuses, the driver's report of what the collector accepted, and a ``Result`` for the
checks the e2e suite uses. The backend behind the routing proxy runs in this process.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nemo_gym.orchestration.executors.otel import (
    COLLECTOR_HEALTH_PORT,
    OTLP_GRPC_PORT,
    OTLP_HTTP_PORT,
    SubmitConfig,
    collector_step,
    collector_step_script,
    merged_driver_env,
    write_collector_config,
)
from nemo_gym.orchestration.executors.otel._common.constants import INGEST_CONFIG_NAME

from .e2e_backend import OtlpBackend, RoutingProxy
from .e2e_job import TOKEN_ENV, Job, Result, _require_free, free_ports
from .e2e_services import FixtureExposition
from .slurm_cluster import Watcher, submit
from .slurm_multi import multi_env
from .slurm_script import JOB_TIME_LIMIT_MINUTES, LATE_REPORT, SERVICES, Scenario, batch_script

HEALTH_TIMEOUT_SECONDS = 60
DRIVER_ENV_EXTRA = {"NEMO_GYM_SLURM_TEST": "lit:driver env from the submit config"}


@dataclass(frozen=True)
class ServedTraffic:
    """What the model service served, as the driver step reported it."""

    prompt_tokens_total: int
    requests: int


@dataclass
class SlurmRun:
    """Everything a Slurm run left behind, for the assertions."""

    scenario: Scenario
    job_id: str
    work: Path  # the scenario's own folder, outside the job directory
    job_dir: Path
    script: Path
    status: dict[str, str]  # what the batch script recorded: exit statuses, clock readings
    start_error: str  # otel_collector_start's stderr
    stop_error: str  # otel_collector_stop's stderr
    steps_seen: set[str]  # step names squeue -s showed while the job ran
    steps_after_start: list[str]  # steps running right after otel_collector_start returned
    steps_after_stop: list[str]
    job_state: str
    scontrol: list[str]  # scontrol show job -d, as seen while the job ran and after
    cmdline_leaks: list[str]  # processes whose command line held the token, token redacted
    grace_seconds: float
    result: Result | None  # None when the driver did not run (the collector never started)

    def seconds_from_term_to_exit(self) -> float:
        """How long the stop waited after the grace: from TERM to the collector's exit."""
        stop = float(self.status["stop_ended"]) - float(self.status["stop_began"])
        return stop - self.grace_seconds

    def late_spans(self) -> set[str]:
        """The span ids of the late batch that the collector accepted (see ``batch_script``)."""
        lines = _read(self.work / LATE_REPORT).splitlines()
        assert lines, f"the late producer reported nothing:\n{self.output_tail()}"
        report = json.loads(lines[-1])
        assert report["phase"] == "done" and not report["failures"], report
        return {s["span_id"] for s in report["spans"]}

    def slurm_outputs(self) -> list[Path]:
        return sorted(self.work.glob("slurm-*.out"))

    def output_tail(self) -> str:
        return output_tail(self.work)


def output_tail(work: Path, lines: int = 40) -> str:
    """The end of the Slurm output files in ``work``, for a failure message: a CI run keeps no
    files, and a step's traceback lands there."""
    return "\n".join(
        f"--- {path.name} (last {lines} lines):\n" + "\n".join(_read(path).splitlines()[-lines:])
        for path in sorted(work.glob("slurm-*.out"))
    )


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def recorded_outcome(
    work: Path,
    job: Job,
    config_path: Path,
    collector_log: Path,
    destinations: tuple[OtlpBackend, RoutingProxy],
    job_id: str,
    exporters: dict[str, str],
) -> tuple[dict[str, str], Result | None]:
    """What the batch script recorded (exit statuses, clock readings) and, when the driver
    ran, the ``Result`` of the job for the e2e checks. ``exporters``: scraped service name to
    the fixture it served."""
    status = dict(line.split("=", 1) for line in _read(work / "status").splitlines() if "=" in line)
    if not (work / "driver.json").exists():
        return status, None
    report = json.loads(_read(work / "driver.json"))
    backend, proxy = destinations
    return status, Result(
        job=job,
        job_dir=config_path.parent.parent,
        otel_dir=config_path.parent,
        config_path=config_path,
        collector_log=collector_log,
        exit_code=int(status.get("stop", "-1")),
        sent=report["sent"],
        backend=backend,
        proxy=proxy,
        model=ServedTraffic(report["served"]["prompt_tokens_total"], report["served"]["requests"]),
        exporters={name: FixtureExposition(fixture) for name, fixture in exporters.items()},
        slurm_job_id=job_id,
    )


def run_slurm_job(
    work: Path,
    output_path: Path,
    scenario: Scenario,
    backend: OtlpBackend,
    proxy: RoutingProxy,
    *,
    three_nodes: bool = False,
) -> SlurmRun:
    """Submit one scenario's job, watch it until it ends, and gather what it left behind.

    With ``three_nodes`` the job runs on one node of the three-node cluster instead of the
    single-node one: the same single-node job, in that node's network namespace (its fixed
    ports are its own), with the backend's proxy on the cluster's bridge (``proxy`` must listen
    there) and reached over plain http, as the multi-node jobs reach it."""
    if not three_nodes:  # the single-node cluster's jobs bind their ports in this namespace
        for port in (OTLP_GRPC_PORT, OTLP_HTTP_PORT, COLLECTOR_HEALTH_PORT):
            _require_free(port)
    work.mkdir(parents=True)
    (work / "control").mkdir()
    job = scenario.job
    ports = dict(zip(SERVICES, free_ports(len(SERVICES)), strict=True))
    mapping = job.config_dict(output_path, ports, proxy.url)
    mapping["otel"]["binary"] = scenario.binary
    mapping["otel"].update(scenario.otel)
    mapping["otel"]["health_check_timeout_seconds"] = HEALTH_TIMEOUT_SECONDS
    # The default interval, as in production: the span metrics flush at it, so the spans of a
    # job's last seconds are counted only when a flush after them still reaches the files.
    del mapping["otel"]["scrape_interval_seconds"]
    mapping["driver"]["env"] = DRIVER_ENV_EXTRA
    if three_nodes:
        mapping["otel"]["allow_plain_http"] = True  # the bridge is the cluster's private network
    config = SubmitConfig.from_dict(mapping)
    job_dir = output_path / job.gym_job_id / job.benchmark
    # As the executor: the config is written first, then the fragment runs the step from it.
    config_path = write_collector_config(config, job.benchmark, job_dir)
    if scenario.break_config is not None:
        # The config the collector's step runs: ingest.yaml beside a disk queue (the sender
        # runs the backend path), else collector.yaml.
        runs = config_path.with_name(INGEST_CONFIG_NAME)
        runs = runs if runs.exists() else config_path
        runs.write_text(scenario.break_config(runs.read_text("utf-8")), "utf-8")
    step = collector_step(config, job.benchmark, str(job_dir))
    (work / "collector-step.sh").write_text(
        collector_step_script(config, job.benchmark, str(job_dir)), "utf-8"
    )
    script = work / "job.sh"
    script.write_text(
        batch_script(
            scenario,
            work,
            ports,
            merged_driver_env(config, job.gym_job_id),
            step.grace_seconds,
        ),
        "utf-8",
    )
    env = {**{k: v for k, v in os.environ.items() if k != TOKEN_ENV}, **scenario.env}
    if scenario.token_in_env:
        env[TOKEN_ENV] = job.token
    if three_nodes:
        env = multi_env(env)
    job_id = submit(script, env)
    on_stop = proxy.become_black_hole if scenario.black_hole_at_stop else (lambda: None)
    watched = multi_env() if three_nodes else None
    watcher = Watcher(job_id, job.token, work / "stopping", on_stop, watched)
    watcher.wait_finished(JOB_TIME_LIMIT_MINUTES * 60 + 60)
    status, result = recorded_outcome(
        work,
        job,
        config_path,
        Path(step.log_path),
        (backend, proxy),
        job_id,
        {name: fixture for name, fixture in SERVICES.items() if fixture is not None},
    )
    return SlurmRun(
        scenario=scenario,
        job_id=job_id,
        work=work,
        job_dir=job_dir,
        script=script,
        status=status,
        start_error=_read(work / "start.err"),
        stop_error=_read(work / "stop.err"),
        steps_seen=watcher.steps_seen,
        steps_after_start=_read(work / "steps-after-start").split(),
        steps_after_stop=_read(work / "steps-after-stop").split(),
        job_state=watcher.state,
        scontrol=watcher.scontrol,
        cmdline_leaks=watcher.cmdline_leaks,
        grace_seconds=step.grace_seconds,
        result=result,
    )


def merge_runs(first: Result, second: Result) -> Result:
    """One Result holding what both runs sent (a requeued job: same job directory, two collectors)."""
    sent: dict[str, dict[str, Any]] = {}
    for name in first.sent:
        sent[name] = {
            key: first.sent[name][key] + second.sent[name][key]
            for key in ("spans", "logs", "points", "failures")
        }
    return Result(**{**second.__dict__, "sent": sent})
