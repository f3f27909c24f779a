"""One benchmark job as on a compute node, from the rendered config to the stopped collector.

``run_job`` renders ``<job dir>/otel/collector.yaml`` with the package's public API, starts the
real collector from it (the token and ``SLURM_JOB_ID`` in its environment, its output in a file
outside the job directory), waits for its health check, lets the model service take traffic and
the producers send, and stops the collector the way the executor does: one more scrape interval
after the producers have finished, then TERM, then up to ``SHUTDOWN_WAIT_SECONDS`` for it to
exit. Everything is on loopback and every wait is bounded.
"""

from __future__ import annotations

import contextlib
import getpass
import itertools
import json
import os
import queue
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemo_gym.orchestration.executors.otel import (
    COLLECTOR_HEALTH_PORT,
    DRAIN_CONFIG_NAME,
    DRAIN_SECONDS,
    OTLP_GRPC_PORT,
    OTLP_HTTP_PORT,
    SHUTDOWN_WAIT_SECONDS,
    SubmitConfig,
    collector_step_script,
    driver_telemetry_env,
    write_collector_config,
)
from nemo_gym.orchestration.executors.otel._common.constants import (
    INGEST_CONFIG_NAME,
    SENDER_CONFIG_NAME,
    SENDER_STOP_SECONDS,
)
from nemo_gym.orchestration.executors.otel._common.hosts import host_port
from nemo_gym.orchestration.executors.otel._render.drain_config import feature_gate_arguments
from nemo_gym.orchestration.executors.otel._step.drain import read_state
from nemo_gym.orchestration.executors.otel._step.drain_processes import answers

from . import helpers
from .e2e_backend import OtlpBackend, RoutingProxy
from .e2e_otlp import SIGNALS, comparable, read_signal
from .e2e_services import FixtureExporter, FixtureExposition, ModelService, Traffic
from .scrape_targets import write_targets

PRODUCER_SCRIPT = Path(__file__).with_name("e2e_producer.py")
TOKEN_ENV = "E2E_INGEST_TOKEN"
SLURM_JOB_ID = "4242"
CLUSTER = "eos-e2e"
SERVICE_NAME = "nemo-gym-eval"
SCRAPE_INTERVAL_SECONDS = 2
# The executor keeps the collector FINAL_SCRAPE_GRACE_SECONDS (20) after the driver, which the
# renderer keeps at least one scrape interval (15s by default); here: one interval plus a margin.
GRACE_SECONDS = SCRAPE_INTERVAL_SECONDS + 1
HEALTH_TIMEOUT_SECONDS = 60
PRODUCER_TIMEOUT_SECONDS = 90
# free_ports picks from here up to the ephemeral range: above every port a template or test fixes.
FIRST_FIXED_PORT = 20_000


@dataclass(frozen=True)
class Producer:
    """One of the job's processes: its own service.name, and what it sends per round."""

    service_name: str
    spans: int
    logs: int
    sandbox_provider: str | None = None


PRODUCERS = (
    Producer("gym-head-server", spans=6, logs=5),
    Producer("gym-resources-server", spans=5, logs=4, sandbox_provider="ray"),
    Producer("gym-agent-server", spans=4, logs=3, sandbox_provider="docker"),
)
ROUNDS = 2
# The scrape jobs (``<otel.component>/<service>``, dcgm, node): the Prometheus receiver makes
# each job's name the service.name of what it scrapes.
SCRAPE_JOBS = ("gym-vllm/policy", "gym-vllm/judge", "dcgm", "node")


def collector_release(line: str) -> str:
    """The release a line's binary is built at (its manifest's ``dist.version``)."""
    manifest = yaml.safe_load(
        (helpers.REPO / "collector" / line / "manifest.yaml").read_text("utf-8")
    )
    return str(manifest["dist"]["version"])


@dataclass(frozen=True)
class Job:
    """What varies between the end-to-end runs."""

    line: str
    exporters: tuple[str, ...]
    token: str
    gym_job_id: str = "e2e-job-1"
    benchmark: str = "aime25"
    model_name: str = "qwen3-30b-a3b"

    def config_dict(
        self, output_path: Path, ports: dict[str, int], endpoint: str | None
    ) -> dict[str, Any]:
        return {
            "services": {
                "policy": {
                    "type": "vllm",
                    "model": "Qwen/Qwen3-30B-A3B-Instruct-2507",
                    "served_model_name": self.model_name,
                    "port": ports["policy"],
                },
                "judge": {
                    "type": "vllm",
                    "model": "meta-llama/Llama-3.3-70B-Instruct",
                    "port": ports["judge"],
                },
                "sandbox": {"type": "ray"},
            },
            "compute": {CLUSTER: {"type": "slurm", "account": "nemo_gym_eval"}},
            "driver": {
                "policy_model": "policy",
                "gym_install": {"repo": "https://github.com/NVIDIA-NeMo/gym", "ref": "v0.4.1"},
                "benchmarks": {self.benchmark: {}},
            },
            "job": {"output_path": str(output_path)},
            "otel": {
                "exporters": list(self.exporters),
                "collector_version": collector_release(self.line),
                "endpoint": endpoint,
                "service_name": SERVICE_NAME,
                "token_env": TOKEN_ENV,
                "scrape_interval_seconds": SCRAPE_INTERVAL_SECONDS,
                "gpu_metrics_port": ports["dcgm"],
                "node_metrics_port": ports["node"],
            },
        }


@dataclass
class Result:
    """Everything a run left behind, for the assertions."""

    job: Job
    job_dir: Path
    otel_dir: Path
    config_path: Path
    collector_log: Path
    exit_code: int
    sent: dict[str, dict[str, Any]]  # producer service.name -> its report
    backend: OtlpBackend | None
    proxy: RoutingProxy | None
    model: Traffic
    exporters: dict[str, FixtureExposition]
    user: str = field(default_factory=getpass.getuser)
    slurm_job_id: str = SLURM_JOB_ID
    drain_exit_code: int | None = None  # the stop's drain (None: no disk queue)
    sender: Sender | None = None  # the backend path's own process (None: no disk queue)

    def file_items(self, signal_name: str) -> list[Any]:
        return read_signal(self.otel_dir, signal_name)

    def backend_items(self, signal_name: str) -> list[Any]:
        assert self.backend is not None
        return self.backend.items(signal_name)


def wait_for(
    predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.1
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # Like the collector's own listener: a closed connection in TIME_WAIT does not count.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports below the kernel's ephemeral range, for listeners
    that bind them later: a port the kernel picked (``bind(0)``) may be handed to another
    process's outgoing connection before the listener binds it (the collector and the backends
    open many), one below the range only to a process that asks for it by number."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    candidates = random.sample(range(FIRST_FIXED_PORT, low), low - FIRST_FIXED_PORT)
    ports = list(itertools.islice(filter(port_is_free, candidates), count))
    if len(ports) < count:
        raise RuntimeError(
            f"fewer than {count} free loopback ports in {FIRST_FIXED_PORT}-{low - 1}"
        )
    return ports


def _require_free(port: int) -> None:
    if not port_is_free(port):
        pytest.fail(
            f"port {port} is in use: the templates fix it, so stop whatever holds it (another collector?)"
        )


def _health_ok(host: str) -> bool:
    try:
        with urllib.request.urlopen(
            f"http://{host}:{COLLECTOR_HEALTH_PORT}/", timeout=2
        ) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def collector_command(binary: Path, config_path: Path) -> list[str]:
    """The collector's command line. The config is passed as a ``file:`` URI: a bare path that
    holds a ':' (a job directory may) is read as a URI of another scheme ("Error: invalid uri").
    The feature gates are the ones the config needs, as the job step and the drain pass them."""
    document = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    return [str(binary), "--config", f"file:{config_path}", *feature_gate_arguments(document)]


def stop_drain(
    binary: Path,
    otel_dir: Path,
    env: dict[str, str],
    cwd: Path,
    log_path: Path,
    host: str = "localhost",
) -> int | None:
    """What the job step's stop runs after the collector when the job directory holds a drain
    config: it, once healthy, until two readings in a row half a second apart of the metrics it
    serves find its queues empty, for at most ``DRAIN_SECONDS`` (the whole time when it pushes a
    delivery report), then TERM; its exit code (None: no drain config, the backend's queue is
    in memory)."""
    drain_config = otel_dir / DRAIN_CONFIG_NAME
    if not drain_config.exists():
        return None
    document = yaml.safe_load(drain_config.read_text(encoding="utf-8"))
    readers = document["service"]["telemetry"]["metrics"]["readers"]
    served = next(r["pull"]["exporter"]["prometheus"] for r in readers if "pull" in r)
    url = f"http://{host_port(served['host'], served['port'])}/metrics"
    pushes = any("periodic" in r for r in readers)
    exporters = set(document["exporters"])
    drain = Collector(binary, drain_config, env, cwd, log_path, host)
    with running(drain):
        drain.wait_healthy()
        empty = 0
        for _ in range(DRAIN_SECONDS * 2):
            if not pushes:
                empty = empty + 1 if _queues_empty(url, exporters) else 0
                if empty == 2:
                    break
            time.sleep(0.5)
        return drain.stop()


def _queues_empty(url: str, exporters: set[str]) -> bool:
    """One reading of a drain's queue sizes, as the step's stop takes it: every exporter's
    queue that reports a size (at least one) reports 0."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            text = response.read().decode()
    except OSError:
        return False
    return read_state(text, exporters, set()).empty


def step_call(fragment: str, env: dict[str, str], functions: str) -> str:
    """Run ``functions`` of a job step's fragment (``collector_step_script``) as the batch
    script does; their output."""
    return subprocess.run(
        ["bash", "-c", f"{fragment}\n{functions}"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout


def start_step(fragment: str, env: dict[str, str]) -> list[str]:
    """What the job step's start (``otel_collector_start``) does before it starts the
    collector: a requeue's zstd files set aside, the live files created, the queue placed, the
    disk budget set (``_step/disk_budget.py``); the arguments it adds to the collector's."""
    said = step_call(
        fragment,
        env,
        "_otel_collector_set_aside && _otel_collector_live_files && _otel_collector_place_queue"
        ' && _otel_collector_set_budget && printf "%s\\n" "${_otel_collector_budget_args[@]}"',
    )
    return [line for line in said.splitlines() if line]


class Collector:
    """The real collector process, started and stopped like the executor does it.

    ``host`` is the config's ``otel.listen_host``, where the health check answers. With
    ``step`` (the job's step fragment), the start is the step's: its preparation
    (:func:`start_step`) first, and once healthy the budget's bound on the collector's files.
    """

    def __init__(
        self,
        binary: Path,
        config_path: Path,
        env: dict[str, str],
        cwd: Path,
        log_path: Path,
        host: str = "localhost",
        command_prefix: tuple[str, ...] = (),
        step: str | None = None,
    ) -> None:
        """``command_prefix``: a command that runs first and execs the collector's (the
        benchmarks' memory cgroup), so the process keeps its pid."""
        self.log_path = log_path
        self.host = host
        self.exit_seconds: float | None = None  # from TERM to exit, once stopped
        self._step = step
        self._env = env
        extra = start_step(step, env) if step else []
        # Appended to: the step's start may have written its own lines there (see start_step),
        # and the sender appends to the same log, as in the step.
        self._log = log_path.open("ab")
        self.process = subprocess.Popen(
            [*command_prefix, *collector_command(binary, config_path), *extra],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def healthy(self) -> bool:
        """Running, and its health check answers 200."""
        return self.process.poll() is None and _health_ok(self.host)

    def wait_healthy(self) -> None:
        def healthy() -> bool:
            if self.process.poll() is not None:
                pytest.fail(
                    f"the collector exited with {self.process.returncode} before it was healthy:\n{_tail(self.log_path)}"
                )
            return _health_ok(self.host)

        wait_for(
            healthy,
            HEALTH_TIMEOUT_SECONDS,
            f"the collector's health check on {self.host}:{COLLECTOR_HEALTH_PORT}",
        )
        if self._step:
            step_call(self._step, self._env, f"_otel_collector_limit_files {self.process.pid}")

    def stop(self) -> int:
        """TERM, then up to SHUTDOWN_WAIT_SECONDS for the collector to flush and exit."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            termed = time.monotonic()
            try:
                self.process.wait(timeout=SHUTDOWN_WAIT_SECONDS)
                self.exit_seconds = time.monotonic() - termed
            except subprocess.TimeoutExpired:
                self.kill()
                pytest.fail(
                    f"the collector did not exit within {SHUTDOWN_WAIT_SECONDS}s of TERM:\n{_tail(self.log_path)}"
                )
        self._log.close()
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self._log.close()


class Sender(Collector):
    """The job step's sender (``sender.yaml``, the backend path behind the disk queue), started
    before the collector and stopped before it, as the step does."""

    def __init__(
        self,
        binary: Path,
        otel_dir: Path,
        env: dict[str, str],
        cwd: Path,
        log_path: Path,
        command_prefix: tuple[str, ...] = (),
    ) -> None:
        config_path = otel_dir / SENDER_CONFIG_NAME
        document = yaml.safe_load(config_path.read_text(encoding="utf-8"))
        (receiver,) = document["receivers"].values()
        self.address = receiver["protocols"]["http"]["endpoint"]
        self.killed = False  # whether the stop had to kill it
        super().__init__(binary, config_path, env, cwd, log_path, command_prefix=command_prefix)

    def wait_healthy(self) -> None:
        def up() -> bool:
            if self.process.poll() is not None:
                pytest.fail(
                    f"the sender exited with {self.process.returncode} before its receiver answered:\n{_tail(self.log_path)}"
                )
            return answers(self.address)  # any HTTP answer: its receiver is up

        wait_for(up, HEALTH_TIMEOUT_SECONDS, f"the sender's receiver on {self.address}")

    def stop(self) -> int:
        """TERM, killed after SENDER_STOP_SECONDS as the step's stop does."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            termed = time.monotonic()
            try:
                self.process.wait(timeout=SENDER_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.killed = True
                self.process.kill()
                self.process.wait(timeout=10)
            self.exit_seconds = time.monotonic() - termed
        self._log.close()
        return self.process.returncode


class StepCollector:
    """The job's collector as the job step runs it: with ``sender.yaml`` beside the config, the
    sender first (up once its receiver answers), then the collector from ``ingest.yaml``; else
    the collector from the config. Stopped the sender first, as the step's stop does. Takes and
    answers like :class:`Collector` (``process``, ``exit_seconds``: the collector's)."""

    def __init__(
        self,
        binary: Path,
        config_path: Path,
        env: dict[str, str],
        cwd: Path,
        log_path: Path,
        host: str = "localhost",
        step: str | None = None,
        command_prefix: tuple[str, ...] = (),
    ) -> None:
        """``step``: the job's step fragment, whose start's preparations run first;
        ``command_prefix``: as :class:`Collector`'s, for both processes."""
        otel_dir = config_path.parent
        self.sender: Sender | None = None
        if (otel_dir / SENDER_CONFIG_NAME).exists():
            self.sender = Sender(binary, otel_dir, env, cwd, log_path, command_prefix)
            try:
                self.sender.wait_healthy()
            except BaseException:
                self.sender.kill()
                raise
            config_path = otel_dir / INGEST_CONFIG_NAME
        try:
            self.collector = Collector(
                binary, config_path, env, cwd, log_path, host, command_prefix, step=step
            )
        except BaseException:
            if self.sender:
                self.sender.kill()
            raise
        self.process = self.collector.process
        self.log_path = log_path

    @property
    def exit_seconds(self) -> float | None:
        return self.collector.exit_seconds

    def healthy(self) -> bool:
        """The collector running and answering its health check (see :meth:`Collector.healthy`)."""
        return self.collector.healthy()

    def wait_healthy(self) -> None:
        self.collector.wait_healthy()

    def stop(self) -> int:
        """The sender (TERM, killed after ``SENDER_STOP_SECONDS``), then the collector's stop."""
        if self.sender:
            self.sender.stop()
        return self.collector.stop()

    def kill(self) -> None:
        self.collector.kill()
        if self.sender:
            self.sender.kill()


def _producer_env(gym_job_id: str, service_name: str, host: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != TOKEN_ENV}
    env.update(driver_telemetry_env(gym_job_id, "default,verify", logs=True))
    if host != "localhost":  # a collector on another address (otel.listen_host)
        for key in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"):
            env[key] = env[key].replace("//localhost:", f"//{host}:")
    env["OTEL_SERVICE_NAME"] = service_name
    return env


class Producers:
    """The job's own processes, one subprocess per service.name (see e2e_producer.py), sending
    to the collector on ``host``.

    ``env``, when given, is every producer's environment (plus its ``OTEL_SERVICE_NAME``) as a
    job's driver has it; by default, this process's with Gym's telemetry switched on.
    """

    def __init__(
        self,
        gym_job_id: str,
        log_dir: Path,
        producers: tuple[Producer, ...] = PRODUCERS,
        rounds: int = ROUNDS,
        host: str = "localhost",
        env: dict[str, str] | None = None,
    ) -> None:
        self.processes: dict[str, subprocess.Popen[str]] = {}
        self.stderr: dict[str, Path] = {}
        self._lines: dict[str, queue.Queue[str]] = {}
        for producer in producers:
            command = [
                sys.executable,
                str(PRODUCER_SCRIPT),
                f"--spans={producer.spans}",
                f"--logs={producer.logs}",
                f"--rounds={rounds}",
            ]
            if producer.sandbox_provider:
                command.append(f"--sandbox-provider={producer.sandbox_provider}")
            name = producer.service_name
            self.stderr[name] = log_dir / f"{name}.stderr"
            with self.stderr[name].open("w") as stderr:
                self.processes[name] = subprocess.Popen(
                    command,
                    env=_producer_env(gym_job_id, name, host)
                    if env is None
                    else {**env, "OTEL_SERVICE_NAME": name},
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    text=True,
                )
            self._lines[name] = queue.Queue()
            threading.Thread(target=self._read, args=(name,), daemon=True).start()

    def _read(self, name: str) -> None:
        stdout = self.processes[name].stdout
        assert stdout is not None
        for line in stdout:
            self._lines[name].put(line)
        self._lines[name].put("")  # end of output

    def _report(self, name: str, expected: str) -> dict[str, Any]:
        try:
            line = self._lines[name].get(timeout=PRODUCER_TIMEOUT_SECONDS)
        except queue.Empty:
            pytest.fail(
                f"producer {name} said nothing for {PRODUCER_TIMEOUT_SECONDS}s:\n{_tail(self.stderr[name])}"
            )
        if not line:
            self.processes[name].wait(timeout=10)
            pytest.fail(
                f"producer {name} exited with {self.processes[name].returncode}:\n{_tail(self.stderr[name])}"
            )
        report = json.loads(line)
        assert report["phase"] == expected, (name, report["phase"])
        assert report["failures"] == [], (
            f"producer {name}: {report['failures']}\n{_tail(self.stderr[name])}"
        )
        return report

    def wait_ready(self) -> dict[str, dict[str, Any]]:
        """The reports after every producer's rounds, before its last batch."""
        return {name: self._report(name, "ready") for name in self.processes}

    def finish(self) -> dict[str, dict[str, Any]]:
        """Send the last batch everywhere, wait for every producer to exit, return the reports."""
        for process in self.processes.values():
            assert process.stdin is not None
            process.stdin.write("last\n")
            process.stdin.close()
        reports = {name: self._report(name, "done") for name in self.processes}
        for name, process in self.processes.items():
            process.wait(timeout=PRODUCER_TIMEOUT_SECONDS)
            assert process.returncode == 0, f"producer {name}:\n{_tail(self.stderr[name])}"
        return reports

    def kill(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


@contextlib.contextmanager
def running(*things: Any) -> Iterator[None]:
    try:
        yield
    finally:
        for thing in things:
            if thing is not None:
                (getattr(thing, "kill", None) or thing.close)()


def run_job(
    tmp_path: Path,
    binary: Path,
    job: Job,
    *,
    during_outage: Callable[[Result], None] | None = None,
) -> Result:
    """Run one job end to end; ``during_outage`` (if given) runs with the backend answering 503."""
    for port in (OTLP_GRPC_PORT, OTLP_HTTP_PORT, COLLECTOR_HEALTH_PORT):
        _require_free(port)
    uses_backend = "otlp_http" in job.exporters
    backend = OtlpBackend() if uses_backend else None
    proxy = RoutingProxy(backend, job.token) if backend else None
    model = ModelService(job.model_name)
    exporters = {
        "judge": FixtureExporter("vllm_metrics.txt"),
        "dcgm": FixtureExporter("dcgm_metrics.txt"),
        "node": FixtureExporter("node_metrics.txt"),
    }
    outside = tmp_path / "outside-job-dir"
    outside.mkdir()
    collector = producers = None
    with running(proxy, backend, model, *exporters.values()):
        ports = {"policy": model.port, **{name: e.port for name, e in exporters.items()}}
        mapping = job.config_dict(tmp_path / "runs", ports, proxy.url if proxy else None)
        config = SubmitConfig.from_dict(mapping)
        job_dir = tmp_path / "runs" / job.gym_job_id / job.benchmark
        config_path = write_collector_config(config, job.benchmark, job_dir)
        write_targets(config, job.benchmark, job_dir)
        home = outside / "collector-home"
        home.mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),  # a value ${env:HOME} would show, were it ever expanded
            TOKEN_ENV: job.token,
            "SLURM_JOB_ID": SLURM_JOB_ID,
        }
        result = Result(
            job=job,
            job_dir=job_dir,
            otel_dir=config_path.parent,
            config_path=config_path,
            collector_log=outside / "collector.log",
            exit_code=-1,
            sent={},
            backend=backend,
            proxy=proxy,
            model=model,
            exporters=exporters,
        )
        if proxy and during_outage:
            proxy.start_outage()
        step = collector_step_script(config, job.benchmark, job_dir)
        collector = StepCollector(
            binary, config_path, env, job_dir, result.collector_log, step=step
        )
        result.sender = collector.sender
        with running(collector):
            collector.wait_healthy()
            model.serve(requests=40, prompt_tokens=12_000, running=3)
            producers = Producers(job.gym_job_id, outside)
            with running(producers):
                result.sent = producers.wait_ready()
                # Prometheus's discovery hands the receiver its targets only after a few seconds.
                targets = [model, *exporters.values()]
                wait_for(
                    lambda: all(t.scrapes for t in targets), 60, "the first scrape of every target"
                )
                if proxy and during_outage:
                    during_outage(result)
                    proxy.end_outage()
                # The final counters, which only the scrape during the grace below can see.
                model.serve(requests=9, prompt_tokens=3_456, running=0)
                result.sent = producers.finish()
            if proxy and during_outage:
                # After recovery the collector retries what the outage refused. The files hold
                # it all by now (they never saw the outage): wait, bounded, until the backend
                # does too, since TERM interrupts a request that is waiting for its next retry.
                written = {s: Counter(comparable(i) for i in result.file_items(s)) for s in SIGNALS}
                wait_for(
                    lambda: backend_holds(result, written),
                    120,
                    "the backend to catch up after the outage",
                    0.5,
                )
            # As the executor: one more scrape interval after the producers finished, then TERM.
            time.sleep(GRACE_SECONDS)
            result.exit_code = collector.stop()
        result.drain_exit_code = stop_drain(
            binary, config_path.parent, env, job_dir, outside / "drain.log"
        )
    return result


def backend_holds(result: Result, items: dict[str, Counter[Any]]) -> bool:
    return all(
        not (items[s] - Counter(comparable(i) for i in result.backend_items(s))) for s in SIGNALS
    )
