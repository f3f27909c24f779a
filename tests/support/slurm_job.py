"""One benchmark job on the real Slurm cluster, from the rendered config to the stopped collector.

``run_slurm_job`` renders ``<job dir>/otel/collector.yaml`` with the package, writes a batch
script around the package's ``collector_step_script`` and submits it with ``sbatch``. The batch
script runs the model service and the node exporters as ``srun --overlap`` steps
(``slurm_service.py``), starts the collector with ``otel_collector_start``, runs the driver step
(``slurm_driver.py``) in the environment of ``merged_driver_env``, and stops the collector with
``otel_collector_stop`` (or, in ``naive`` mode, with ``kill -TERM`` of the collector's background
``srun``). The backend behind the routing proxy runs in this process, on loopback.

While the job runs, this process watches it: the names of its steps (``squeue -s``), every
process's command line and ``scontrol show job -d`` (the token must be in none of them); and,
when asked, it black-holes the backend the moment the batch script starts the stop. Every wait
is bounded; a job that outlives its bound is cancelled and the test fails.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

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

from .e2e_backend import OtlpBackend, RoutingProxy
from .e2e_job import PRODUCER_SCRIPT, TOKEN_ENV, Job, Result, _require_free
from .e2e_services import FixtureExposition

TESTS = Path(__file__).resolve().parents[1]
# The job's services: step name -> the fixture it serves (None: the vLLM-shaped model service).
SERVICES: dict[str, str | None] = {
    "policy": None,
    "judge": "vllm_metrics.txt",
    "dcgm": "dcgm_metrics.txt",
    "node": "node_metrics.txt",
}
HEALTH_TIMEOUT_SECONDS = 60
JOB_TIME_LIMIT_MINUTES = 5
# squeue's and scontrol's view of the job while it runs, and every process's command line.
WATCH_INTERVAL_SECONDS = 0.5
# The ways a scenario may signal the collector at the end of the job besides the fragment's own
# stop (both after a late batch, see ``batch_script``): kill -TERM of the step's background
# srun, as an executor that kept its pid would, and a TERM to the step itself.
STOP_SIGNALS = {
    "naive": 'kill -TERM "$collector_srun"',
    "scancel-term": "scancel --signal=TERM "
    "$(squeue -s -h -j \"$SLURM_JOB_ID\" -o '%i %j' | awk '$2 == \"otel_collector\" {print $1}')",
}
LATE_PRODUCER = "gym-late-server"
LATE_REPORT = "late-producer.jsonl"
LATE_WAIT_POLLS = 3000  # of 20 ms: at most a minute for the late producer's report
DRIVER_ENV_EXTRA = {"NEMO_GYM_SLURM_TEST": "lit:driver env from the submit config"}


@dataclass(frozen=True)
class ServedTraffic:
    """What the model service served, as the driver step reported it."""

    prompt_tokens_total: int
    requests: int


@dataclass(frozen=True)
class Scenario:
    """What varies between the Slurm runs."""

    name: str
    job: Job
    binary: str  # otel.binary in the submit config
    token_in_env: bool = True  # the job's environment holds the token variable
    stop: str = "fragment"  # or a key of STOP_SIGNALS
    black_hole_at_stop: bool = False
    # Turns the written collector.yaml into a broken one, as a hand edit could.
    break_config: Callable[[str], str] | None = None


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
        assert lines, f"the late producer reported nothing; see {self.slurm_outputs()}"
        report = json.loads(lines[-1])
        assert report["phase"] == "done" and not report["failures"], report
        return {s["span_id"] for s in report["spans"]}

    def slurm_outputs(self) -> list[Path]:
        return sorted(self.work.glob("slurm-*.out"))


def free_port() -> int:
    """A port nothing listens on now, for a service step to bind (the kernel's pick, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cluster_problem() -> str | None:
    """Why no job can run on the local Slurm cluster, or None when it takes jobs."""
    try:
        result = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo failed: {exc}"
    states = result.stdout.split()
    if result.returncode != 0 or not {"idle", "mixed", "allocated"} & set(states):
        return f"no Slurm node takes jobs (sinfo: {result.stdout.strip() or result.stderr.strip()})"
    return None


def require_cluster() -> None:
    problem = cluster_problem()
    if problem is None:
        return
    message = f"{problem}\nAs root, run .ci/slurm-up to bring up a single-node cluster."
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def _quoted(values: list[str] | tuple[str, ...]) -> str:
    return " ".join(shlex.quote(v) for v in values)


def batch_script(
    scenario: Scenario,
    work: Path,
    ports: dict[str, int],
    driver_env: dict[str, str],
    grace_seconds: int,
) -> str:
    """The job script: services, collector start, driver, collector stop; every outcome recorded."""
    python = _quoted([sys.executable])
    status = shlex.quote(str(work / "status"))
    control_dir = shlex.quote(str(work / "control"))
    services = []
    for name, fixture in SERVICES.items():
        kind = ["model", name, f"--model-name={scenario.job.model_name}"]
        if fixture is not None:
            kind = ["fixture", name, f"--fixture={fixture}"]
        services.append(
            f"srun --overlap --nodes=1 --ntasks=1 --job-name={name} --export=ALL "
            f"{python} -m support.slurm_service {_quoted(kind)} --port={ports[name]} "
            f"--control-dir={control_dir} &"
        )
    exports = "\n".join(f"    export {k}={shlex.quote(v)}" for k, v in driver_env.items())
    driver = _quoted(
        [
            "--control-dir",
            str(work / "control"),
            "--services",
            ",".join(SERVICES),
            "--model",
            "policy",
            "--report",
            str(work / "driver.json"),
            "--gym-job-id",
            scenario.job.gym_job_id,
        ]
    )
    stop = "otel_collector_stop"
    if scenario.stop != "fragment":
        late = shlex.quote(str(work / LATE_REPORT))
        stop = f"""collector_srun=$(ps -o pid=,args= --ppid $$ | awk '/--job-name=otel_collector/ {{print $1}}')
    sleep {grace_seconds}
    # A Gym server still reporting as the stop comes: the collector is signalled the moment
    # the server's last batch was accepted (its report says done), well inside the batch
    # processor's timeout, so only a clean shutdown delivers that batch.
    (
{exports}
        export OTEL_SERVICE_NAME={LATE_PRODUCER}
        echo last | srun --unbuffered --overlap --nodes=1 --ntasks=1 --job-name=late \\
            --export=ALL {python} {shlex.quote(str(PRODUCER_SCRIPT))} --spans=1 --logs=1 \\
            --rounds=0 >{late}
    ) &
    for ((i = 0; i < {LATE_WAIT_POLLS}; i++)); do
        grep -q '"phase": "done"' {late} 2>/dev/null && break
        sleep 0.02
    done
    {STOP_SIGNALS[scenario.stop]}
    wait "$collector_srun"
"""
    steps = "squeue -s -h -j \"$SLURM_JOB_ID\" -o '%j'"
    return f"""#!/bin/bash
#SBATCH --job-name=gym-otel-{scenario.name}
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --time={JOB_TIME_LIMIT_MINUTES}
#SBATCH --output={work}/slurm-%j.out
#SBATCH --chdir={work}
record() {{ printf '%s=%s\\n' "$1" "$2" >>{status}; }}
stop_collector() {{
    {stop.strip()}
}}
source {shlex.quote(str(work / "collector-step.sh"))}
export PYTHONPATH={shlex.quote(str(TESTS))}
{chr(10).join(services)}
otel_collector_start 2>{shlex.quote(str(work / "start.err"))}
record start $?
{steps} >{shlex.quote(str(work / "steps-after-start"))}
if [[ $(tail -n 1 {status}) != start=0 ]]; then
    exit 0
fi
(
{exports}
    srun --overlap --nodes=1 --ntasks=1 --job-name=driver --export=ALL {python} -m support.slurm_driver {driver}
)
record driver $?
record stop_began "$(date +%s.%N)"
touch {shlex.quote(str(work / "stopping"))}
stop_collector 2>{shlex.quote(str(work / "stop.err"))}
record stop $?
record stop_ended "$(date +%s.%N)"
{steps} >{shlex.quote(str(work / "steps-after-stop"))}
"""


class Watcher:
    """Watches the running job from outside: its steps, command lines, scontrol's view."""

    def __init__(self, job_id: str, token: str, stopping: Path, on_stop: Callable[[], None]):
        self.job_id = job_id
        self._token = token.encode()
        self._stopping = stopping
        self._on_stop = on_stop
        self.steps_seen: set[str] = set()
        self.scontrol: list[str] = []
        self.cmdline_leaks: list[str] = []
        self.state = ""
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        stop_seen = False
        while not self._done.is_set():
            self._scan_cmdlines()
            self.steps_seen.update(_lines(["squeue", "-s", "-h", "-j", self.job_id, "-o", "%j"]))
            self.scontrol.append(_text(["scontrol", "show", "job", "-d", self.job_id]))
            if not stop_seen and self._stopping.exists():
                stop_seen = True
                self._on_stop()
            time.sleep(WATCH_INTERVAL_SECONDS)

    def _scan_cmdlines(self) -> None:
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                text = cmdline.read_bytes()
            except OSError:
                continue
            if self._token in text:
                shown = text.replace(self._token, b"<TOKEN>").replace(b"\0", b" ")
                self.cmdline_leaks.append(shown.decode(errors="replace")[:300])

    def wait_finished(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while _lines(["squeue", "-h", "-j", self.job_id, "-o", "%T"]):
            if time.monotonic() > deadline:
                subprocess.run(["scancel", self.job_id], check=False, timeout=30)
                self.close()
                pytest.fail(f"job {self.job_id} still running after {timeout:.0f}s; cancelled it")
            time.sleep(0.5)
        self.close()
        final = _text(["scontrol", "show", "job", "-d", self.job_id])
        self.scontrol.append(final)
        self.state = next(
            (w.split("=", 1)[1] for w in final.split() if w.startswith("JobState=")), ""
        )

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=30)


def _text(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False).stdout


def _lines(command: list[str]) -> list[str]:
    return _text(command).split()


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def submit(script: Path, env: dict[str, str]) -> str:
    result = subprocess.run(
        ["sbatch", "--parsable", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"sbatch failed: {result.stderr.strip()}")
    return result.stdout.strip().split(";")[0]


def run_slurm_job(
    work: Path,
    output_path: Path,
    scenario: Scenario,
    backend: OtlpBackend,
    proxy: RoutingProxy,
) -> SlurmRun:
    """Submit one scenario's job, watch it until it ends, and gather what it left behind."""
    for port in (OTLP_GRPC_PORT, OTLP_HTTP_PORT, COLLECTOR_HEALTH_PORT):
        _require_free(port)
    work.mkdir(parents=True)
    (work / "control").mkdir()
    job = scenario.job
    ports = {name: free_port() for name in SERVICES}
    mapping = job.config_dict(output_path, ports, proxy.url)
    mapping["otel"]["binary"] = scenario.binary
    mapping["otel"]["health_check_timeout_seconds"] = HEALTH_TIMEOUT_SECONDS
    # The default interval, as in production: the span metrics flush at it, so the spans of a
    # job's last seconds are counted only when a flush after them still reaches the files.
    del mapping["otel"]["scrape_interval_seconds"]
    mapping["driver"]["env"] = DRIVER_ENV_EXTRA
    config = SubmitConfig.from_dict(mapping)
    job_dir = output_path / job.gym_job_id / job.benchmark
    # As the executor: the config is written first, then the fragment runs the step from it.
    config_path = write_collector_config(config, job.benchmark, job_dir)
    if scenario.break_config is not None:
        config_path.write_text(scenario.break_config(config_path.read_text("utf-8")), "utf-8")
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
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    if scenario.token_in_env:
        env[TOKEN_ENV] = job.token
    job_id = submit(script, env)
    on_stop = proxy.become_black_hole if scenario.black_hole_at_stop else (lambda: None)
    watcher = Watcher(job_id, job.token, work / "stopping", on_stop)
    watcher.wait_finished(JOB_TIME_LIMIT_MINUTES * 60 + 60)
    status = dict(line.split("=", 1) for line in _read(work / "status").splitlines() if "=" in line)
    result = None
    if (work / "driver.json").exists():
        report = json.loads(_read(work / "driver.json"))
        result = Result(
            job=job,
            job_dir=job_dir,
            otel_dir=config_path.parent,
            config_path=config_path,
            collector_log=Path(step.log_path),
            exit_code=int(status.get("stop", "-1")),
            sent=report["sent"],
            backend=backend,
            proxy=proxy,
            model=ServedTraffic(
                report["served"]["prompt_tokens_total"], report["served"]["requests"]
            ),
            exporters={
                name: FixtureExposition(fixture)
                for name, fixture in SERVICES.items()
                if fixture is not None
            },
            slurm_job_id=job_id,
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
