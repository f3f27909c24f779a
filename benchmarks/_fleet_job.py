"""One job of the fleet, as its Slurm step runs it: the package renders the job directory's
collector config (the default rendering: both exporters, the disk queue), the step starts the
collector and waits for its health check, and at the end stops it (TERM, the bounded wait) and
runs the stop's drain.

Every process of a job runs in the job's network namespace (``_fleet_network``). This class is
the one place that knows which processes a job's step starts: ``pids`` is what the benchmark
samples for CPU and memory, so a step that starts more than one process changes only here.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from support.e2e_job import StepCollector, collector_release, stop_drain

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import collector_step_script, write_collector_config
from nemo_gym.orchestration.executors.otel._job_dir.collector_log import read_collector_log

from ._fleet_network import FleetNetwork

BENCHMARK = "aime25"
TOKEN_ENV = "FLEET_OTEL_TOKEN"
CLUSTER = "eos"
# A collector the benchmark leaves behind (killed itself, say) dies with it, not later.
DIE_WITH_PARENT = ("setpriv", "--pdeathsig", "KILL", "--")


def job_mapping(output_path: Path, endpoint: str, line: str) -> dict[str, Any]:
    """A job whose servers push and which has no model of its own to scrape: the load generator
    stands in for its servers and for what a scrape would add (``LARGE_JOB`` counts both). The
    backend is on the fleet's bridge, a private network, hence plain http."""
    return {
        "services": {},
        "compute": {CLUSTER: {"type": "slurm", "account": "nemo_gym_eval"}},
        "driver": {
            "gym_install": {"repo": "https://github.com/NVIDIA-NeMo/gym", "ref": "v0.4.1"},
            "benchmarks": {BENCHMARK: {}},
        },
        "job": {"output_path": str(output_path)},
        "otel": {
            "endpoint": endpoint,
            "allow_plain_http": True,
            "service_name": "nemo-gym-eval",
            "token_env": TOKEN_ENV,
            "collector_version": collector_release(line),
            "gpu_metrics_port": None,
            "node_metrics_port": None,
        },
    }


class FleetJob:
    """Job ``index`` of the fleet: its job directory under ``root``, its own token."""

    def __init__(
        self, index: int, root: Path, binary: Path, line: str, endpoint: str, network: FleetNetwork
    ) -> None:
        self.index, self.binary, self.network = index, binary, network
        self.token = f"fleet-{index:03d}-" + secrets.token_hex(12)
        self.logs = root / "logs" / f"job-{index:03d}"  # outside the job directory, as in a step
        self.logs.mkdir(parents=True)
        config = SubmitConfig.from_dict(job_mapping(root / "runs", endpoint, line))
        self.job_dir = root / "runs" / f"fleet-{index:03d}" / BENCHMARK
        self.config_path = write_collector_config(config, BENCHMARK, self.job_dir)
        self.step = collector_step_script(config, BENCHMARK, self.job_dir)
        home = self.logs / "home"
        home.mkdir()
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            TOKEN_ENV: self.token,
            "SLURM_JOB_ID": str(5000 + index),
        }
        self.collector: StepCollector | None = None

    def start(self) -> None:
        """The step's start: its preparations (the queue's place, the disk budget), the sender
        up, then the collector, not waiting for its health: ``wait_healthy`` waits (start all,
        then wait)."""
        with self.network.inside(self.index):
            self.collector = StepCollector(
                self.binary,
                self.config_path,
                self.env,
                self.job_dir,
                self.logs / "collector.log",
                step=self.step,
                command_prefix=DIE_WITH_PARENT,
            )

    def wait_healthy(self) -> None:
        assert self.collector is not None
        with self.network.inside(self.index):
            self.collector.wait_healthy()

    @property
    def pids(self) -> list[int]:
        """The job's collector and its sender."""
        if self.collector is None:
            return []
        sender = self.collector.sender
        return [self.collector.process.pid, *([sender.process.pid] if sender else [])]

    def stop(self) -> dict[str, int | None]:
        """The step's stop: TERM and the bounded wait, then the stop's drain; exit codes."""
        assert self.collector is not None
        with self.network.inside(self.index):
            code = self.collector.stop()
            drain = stop_drain(
                self.binary,
                self.config_path.parent,
                self.env,
                self.job_dir,
                self.logs / "drain.log",
            )
        return {"collector": code, "drain": drain}

    def retried_after_timeout(self) -> int:
        """Requests the collector sent again after the backend did not answer within the
        attempt's bound, as its log says (``nemo-gym-otel report`` counts the same lines):
        the backend may hold their items twice."""
        log = read_collector_log(self.logs / "collector.log")
        return sum(log.retried.values()) if log else 0

    def kill(self) -> None:
        if self.collector is not None:
            self.collector.kill()
