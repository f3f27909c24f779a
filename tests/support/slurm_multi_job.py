"""The bundled example's shape as one heterogeneous job on the three-node cluster.

Pool ``main`` is component 0 on n1 (the policy, the driver, Gym's servers, the collector); pool
``judge`` is component 1 on n2 and n3 (the judge's server on n2). A node exporter and a DCGM
exporter run on every node, at the same ports everywhere, each node being a network namespace
of its own. Every service listens on all of its node's interfaces, as vLLM and the exporters do
by default. The backend behind the routing proxy runs in this process on the cluster's bridge
address, where the collector on n1 reaches it.

A scenario can leave out the exporters of some nodes or the judge's server: the faults the
report must name while the rest of the data stays complete.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nemo_gym.orchestration.executors.otel import (
    OTLP_GRPC_PORT,
    OTLP_HTTP_PORT,
    SubmitConfig,
    collector_step,
    collector_step_script,
    merged_driver_env,
    write_collector_config,
)

from . import helpers
from .e2e_backend import OtlpBackend, RoutingProxy
from .e2e_job import TOKEN_ENV, Job, Result
from .e2e_job_end import PUSHERS
from .slurm_cluster import Watcher
from .slurm_job import DRIVER_ENV_EXTRA, HEALTH_TIMEOUT_SECONDS, _read, recorded_outcome
from .slurm_multi import CONTROLLER_ADDRESS, multi_env, submit
from .slurm_script import driver_command, pushers_start, pushers_stop

TESTS = helpers.REPO / "tests"
POOLS = {"main": ("n1",), "judge": ("n2", "n3")}
NODES = tuple(node for nodes in POOLS.values() for node in nodes)
PORTS = {"policy": 8000, "judge": 8100, "dcgm": 9400, "node": 9100}
EXPORTERS = {"dcgm": "dcgm_metrics.txt", "node": "node_metrics.txt"}
JUDGE_FIXTURE = "vllm_metrics.txt"
JOB_TIME_LIMIT_MINUTES = 5
# A server pushing until the job ends on every node (``e2e_pusher.py``): the one on the
# collector's node reaches it on localhost, as the driver's environment says; the others over
# the job's network, at the collector's node (``otel.listen_host`` must then be a wildcard).
PUSHER_NODES = dict(zip(PUSHERS, NODES, strict=True))


@dataclass(frozen=True)
class MultiScenario:
    name: str
    job: Job
    binary: str
    exporters_on: tuple[str, ...] = NODES  # the nodes whose node and DCGM exporters run
    judge_starts: bool = True
    # Servers that push until the job ends, one on each node (PUSHER_NODES): started after the
    # collector, TERMed only after its stop (and the stop's drain) returned.
    pushers: bool = False
    otel: dict[str, Any] = field(default_factory=dict)  # more keys of the otel section


@dataclass
class MultiRun:
    scenario: MultiScenario
    job_id: str
    work: Path
    job_dir: Path
    status: dict[str, str]
    start_error: str
    stop_error: str
    job_state: str
    cmdline_leaks: list[str]
    result: Result | None


def _srun(group: int, node: str, name: str, command: str) -> str:
    return (
        f"srun --overlap --het-group={group} --nodes=1 --ntasks=1 --nodelist={node} "
        f"--job-name={name} --export=ALL {command} &"
    )


def _service(work: Path, kind: list[str], port: int) -> str:
    python = shlex.quote(sys.executable)
    args = " ".join(shlex.quote(a) for a in kind)
    control = shlex.quote(str(work / "control"))
    return f"{python} -m support.slurm_service {args} --port={port} --host=0.0.0.0 --control-dir={control}"


def batch_script(scenario: MultiScenario, work: Path, driver_env: dict[str, str]) -> str:
    """Services on their nodes, the collector's start, the driver on n1, the collector's stop."""
    status = shlex.quote(str(work / "status"))
    services = [
        _srun(
            0,
            "n1",
            "policy",
            _service(
                work,
                ["model", "policy", f"--model-name={scenario.job.model_name}"],
                PORTS["policy"],
            ),
        )
    ]
    if scenario.judge_starts:
        judge = ["fixture", "judge", f"--fixture={JUDGE_FIXTURE}"]
        services.append(_srun(1, "n2", "judge", _service(work, judge, PORTS["judge"])))
    for group, nodes in enumerate(POOLS.values()):
        for node in nodes:
            if node not in scenario.exporters_on:
                continue
            for name, fixture in EXPORTERS.items():
                kind = ["fixture", f"{name}-{node}", f"--fixture={fixture}"]
                services.append(_srun(group, node, name, _service(work, kind, PORTS[name])))
    pushers = _pushers(scenario, work, driver_env)
    local = ["policy", *(f"{n}-n1" for n in EXPORTERS if "n1" in scenario.exporters_on)]
    driver = driver_command(work, scenario.job, local)
    exports = "\n".join(f"    export {k}={shlex.quote(v)}" for k, v in driver_env.items())
    return f"""#!/bin/bash
#SBATCH --job-name=gym-otel-multi-{scenario.name}
#SBATCH --nodes=1 --ntasks=1 --cpus-per-task=1 --nodelist=n1
#SBATCH --time={JOB_TIME_LIMIT_MINUTES}
#SBATCH --output={work}/slurm-%j.out
#SBATCH --chdir={work}
#SBATCH hetjob
#SBATCH --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 --nodelist=n2,n3
record() {{ printf '%s=%s\\n' "$1" "$2" >>{status}; }}
source {shlex.quote(str(work / "collector-step.sh"))}
export PYTHONPATH={shlex.quote(str(TESTS))}
{chr(10).join(services)}
otel_collector_start 2>{shlex.quote(str(work / "start.err"))}
record start $?
if [[ $(tail -n 1 {status}) != start=0 ]]; then
    exit 0
fi
{pushers[0]}(
{exports}
    srun --overlap --het-group=0 --nodes=1 --ntasks=1 --job-name=driver --export=ALL {driver}
)
record driver $?
otel_collector_stop 2>{shlex.quote(str(work / "stop.err"))}
record stop $?
{pushers[1]}"""


def _pushers(scenario: MultiScenario, work: Path, driver_env: dict[str, str]) -> tuple[str, str]:
    """The batch script's lines that start the pushers and that stop them (empty without)."""
    if not scenario.pushers:
        return "", ""
    collector_node = POOLS["main"][0]
    remote = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{collector_node}:{OTLP_HTTP_PORT}",
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"http://{collector_node}:{OTLP_GRPC_PORT}",
    }
    groups = {node: group for group, nodes in enumerate(POOLS.values()) for node in nodes}
    placed = {
        name: (
            {} if node == collector_node else remote,
            f"--het-group={groups[node]} --nodelist={node} ",
        )
        for name, node in PUSHER_NODES.items()
    }
    exports = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in driver_env.items())
    return pushers_start(work, exports, placed), pushers_stop()


def config_mapping(
    job: Job, output_path: Path, endpoint: str, binary: str, extra: dict[str, Any]
) -> dict:
    """The submit config of the bundled example's shape; ``extra``: more keys of ``otel``."""
    mapping = job.config_dict(output_path, PORTS, endpoint)
    (compute,) = mapping["compute"].values()
    compute["node_pools"] = {pool: {"nodes": len(nodes)} for pool, nodes in POOLS.items()}
    mapping["services"]["judge"]["node_pool"] = "judge"
    otel = mapping["otel"]
    otel["binary"] = binary
    otel.update(extra)
    otel["health_check_timeout_seconds"] = HEALTH_TIMEOUT_SECONDS
    # The test backend answers plain HTTP on the cluster's bridge, off the collector's node.
    otel["allow_plain_http"] = True
    # The default interval, as in production (see slurm_job.run_slurm_job).
    del otel["scrape_interval_seconds"]
    mapping["driver"]["env"] = DRIVER_ENV_EXTRA
    return mapping


def backend_on_the_bridge(token: str) -> tuple[OtlpBackend, RoutingProxy]:
    backend = OtlpBackend()
    return backend, RoutingProxy(backend, token, host=CONTROLLER_ADDRESS)


def run_multi_node_job(
    work: Path,
    output_path: Path,
    scenario: MultiScenario,
    backend: OtlpBackend,
    proxy: RoutingProxy,
) -> MultiRun:
    """Submit the scenario's job, watch it until it ends, and gather what it left behind."""
    work.mkdir(parents=True)
    (work / "control").mkdir()
    job = scenario.job
    config = SubmitConfig.from_dict(
        config_mapping(job, output_path, proxy.url, scenario.binary, scenario.otel)
    )
    job_dir = output_path / job.gym_job_id / job.benchmark
    config_path = write_collector_config(config, job.benchmark, job_dir)
    step = collector_step(config, job.benchmark, str(job_dir))
    (work / "collector-step.sh").write_text(
        collector_step_script(config, job.benchmark, str(job_dir)), "utf-8"
    )
    script = work / "job.sh"
    script.write_text(
        batch_script(scenario, work, merged_driver_env(config, job.gym_job_id)), "utf-8"
    )
    env = multi_env({k: v for k, v in os.environ.items() if k != TOKEN_ENV})
    env[TOKEN_ENV] = job.token
    job_id = submit(script, env)
    watcher = Watcher(job_id, job.token, work / "never", lambda: None, multi_env())
    watcher.wait_finished(JOB_TIME_LIMIT_MINUTES * 60 + 60)
    status, result = recorded_outcome(
        work,
        job,
        config_path,
        Path(step.log_path),
        (backend, proxy),
        job_id,
        {"judge": JUDGE_FIXTURE, **EXPORTERS},
    )
    return MultiRun(
        scenario=scenario,
        job_id=job_id,
        work=work,
        job_dir=job_dir,
        status=status,
        start_error=_read(work / "start.err"),
        stop_error=_read(work / "stop.err"),
        job_state=watcher.state,
        cmdline_leaks=watcher.cmdline_leaks,
        result=result,
    )
