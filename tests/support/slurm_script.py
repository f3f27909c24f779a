"""The batch script of one Slurm test job, around the package's ``collector_step_script``.

The script runs the model service and the node exporters as ``srun --overlap`` steps
(``slurm_service.py``), starts the collector with ``otel_collector_start``, runs the driver step
(``slurm_driver.py``) in the environment of ``merged_driver_env``, and stops the collector, by
default with ``otel_collector_stop``. It records every exit status and the clock around the stop
in a ``status`` file of the scenario's folder (outside the job directory), which the test reads.
"""

from __future__ import annotations

import shlex
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nemo_gym.orchestration.executors.otel import COLLECTOR_SERVICE_NAME

from . import helpers
from .e2e_job import PRODUCER_SCRIPT, Job
from .e2e_job_end import PUSHER_SCRIPT, SDK_TIMEOUT_SECONDS

TESTS = helpers.REPO / "tests"
# The job's services: step name -> the fixture it serves (None: the vLLM-shaped model service).
SERVICES: dict[str, str | None] = {
    "policy": None,
    "judge": "vllm_metrics.txt",
    "dcgm": "dcgm_metrics.txt",
    "node": "node_metrics.txt",
}
JOB_TIME_LIMIT_MINUTES = 5
# The ways a scenario may signal the collector at the end of the job besides the fragment's own
# stop (both after a late batch, see ``batch_script``): kill -TERM of the step's background
# srun, as an executor that kept its pid would, and a TERM to the step itself.
STOP_SIGNALS = {
    "naive": 'kill -TERM "$collector_srun"',
    "scancel-term": "scancel --signal=TERM $(squeue -s -h -j \"$SLURM_JOB_ID\" -o '%i %j' "
    f"| awk '$2 == \"{COLLECTOR_SERVICE_NAME}\" {{print $1}}')",
}
LATE_PRODUCER = "gym-late-server"
LATE_REPORT = "late-producer.jsonl"
LATE_WAIT_POLLS = 3000  # of 20 ms: at most a minute for the late producer's report
PUSHER_STEP = "pusher"


def pusher_report(work: Path, service: str) -> Path:
    """Where a pusher step reports what the collector accepted (``e2e_pusher.Report``)."""
    return work / f"{service}.accepted.jsonl"


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
    otel: dict[str, Any] = field(default_factory=dict)  # more keys of the otel section
    # Servers that push until the job ends (``e2e_pusher.py``, one step each): started after
    # the collector, TERMed only after its stop (and the stop's drain) returned.
    pushers: tuple[str, ...] = ()
    # More variables of the submitting environment, which the job inherits (e.g. its TMPDIR).
    env: dict[str, str] = field(default_factory=dict)


def _quoted(values: list[str] | tuple[str, ...]) -> str:
    return " ".join(shlex.quote(v) for v in values)


def driver_command(work: Path, job: Job, services: list[str]) -> str:
    """The driver step's command (``slurm_driver.py``): it waits for ``services`` (steps on its
    own node: their control ports are on its loopback), sends the policy its traffic, runs the
    producers and reports into ``work``."""
    return _quoted(
        [
            sys.executable,
            "-m",
            "support.slurm_driver",
            "--control-dir",
            str(work / "control"),
            "--services",
            ",".join(services),
            "--model",
            "policy",
            "--report",
            str(work / "driver.json"),
            "--gym-job-id",
            job.gym_job_id,
        ]
    )


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
    exports = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in driver_env.items())
    driver = driver_command(work, scenario.job, list(SERVICES))
    stop = "otel_collector_stop"
    if scenario.stop != "fragment":
        late = shlex.quote(str(work / LATE_REPORT))
        stop = f"""collector_srun=$(ps -o pid=,args= --ppid $$ | awk '/--job-name={COLLECTOR_SERVICE_NAME}/ {{print $1}}')
    sleep {grace_seconds}
    # A Gym server still reporting as the stop comes: the collector is signalled the moment
    # the server's last batch was accepted (its report says done), well inside the batch
    # processor's timeout, so only a clean shutdown delivers that batch.
    (
{textwrap.indent(exports, " " * 8)}
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
{_pushers_start(scenario, work, exports)}(
{textwrap.indent(exports, " " * 4)}
    srun --overlap --nodes=1 --ntasks=1 --job-name=driver --export=ALL {driver}
)
record driver $?
record stop_began "$(date +%s.%N)"
touch {shlex.quote(str(work / "stopping"))}
stop_collector 2>{shlex.quote(str(work / "stop.err"))}
record stop $?
record stop_ended "$(date +%s.%N)"
{_pushers_stop(scenario)}{steps} >{shlex.quote(str(work / "steps-after-stop"))}
"""


def _pushers_start(scenario: Scenario, work: Path, exports: str) -> str:
    """The pusher steps, in the background, in the driver's environment."""
    if not scenario.pushers:
        return ""
    return pushers_start(work, exports, {name: ({}, "") for name in scenario.pushers})


def pushers_start(work: Path, exports: str, placed: dict[str, tuple[dict[str, str], str]]) -> str:
    """Pusher steps (``e2e_pusher.py``), in the background, in the driver's environment
    ``exports``: one per service name of ``placed``, with its (variables, ``srun`` options),
    which put it on a node of its own and point it at the collector from there."""
    python = _quoted([sys.executable])
    steps = "\n".join(
        f"    OTEL_SERVICE_NAME={shlex.quote(name)} "
        + "".join(f"{k}={shlex.quote(v)} " for k, v in variables.items())
        + f"srun --overlap {options}--nodes=1 --ntasks=1 --job-name={PUSHER_STEP} --export=ALL "
        f"{python} {shlex.quote(str(PUSHER_SCRIPT))} "
        f"--report={shlex.quote(str(pusher_report(work, name)))} &"
        for name, (variables, options) in placed.items()
    )
    return f"""(
{textwrap.indent(exports, " " * 4)}
    export OTEL_EXPORTER_OTLP_TIMEOUT={SDK_TIMEOUT_SECONDS}
{steps}
    wait
) &
pushers=$!
"""


def _pushers_stop(scenario: Scenario) -> str:
    return pushers_stop() if scenario.pushers else ""


def pushers_stop() -> str:
    """TERM to the pusher steps once the stop returned: they pushed through it. A
    heterogeneous job's steps are listed under their component's own job id, so every
    component's steps are looked at."""
    return f"""scancel --signal=TERM $(for component in $(squeue -h -j "$SLURM_JOB_ID" -o %A); do squeue -s -h -j "$component" -o '%i %j'; done | awk '$2 == "{PUSHER_STEP}" {{print $1}}')
wait "$pushers"
record pushers $?
record pushers_ended "$(date +%s.%N)"
"""
