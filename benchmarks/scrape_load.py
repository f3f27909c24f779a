"""Benchmark: one collector scraping every node of a 64-node job (issue 16).

Why: the rendered config makes the job's one collector scrape the node and DCGM exporters of
every node (``file_sd_configs`` targets written by the job step's start), where a design with a
collector per node would spread that work. The goal for the one collector at 64 nodes and the
default interval (15 s): no missed scrape, at most one core and 512 MiB. The collector
benchmark (``collector_load``) sends the scraped series as OTLP; this one makes the Prometheus
receiver do the scraping, parsing and conversion itself.

How: synthetic exporters of a large GPU server (``_expositions``: node_exporter with 2,401
series, DCGM with 8 GPUs x 37 fields = 296) are served by plain threaded Python HTTP servers,
static bytes generated once (gzip when the scraper asks for it, as the real exporters do), on
loopback addresses: node ``127.0.1.<i>`` listens on that address, every node's exporters on the
same two ports (``otel.node_metrics_port``, ``otel.gpu_metrics_port``); the first node is the
collector's own, whose targets the job step writes as ``localhost:<port>``, so its exporters
and the policy model service (the vLLM fixture exposition) listen on 127.0.0.1. The config is
rendered by ``write_collector_config`` from the bundled example made a one-pool job of N nodes
(no judge, exporters ``[file]``, the collector on 127.0.0.71 of its own), and the targets files
by the package's own bash fragment with ``SLURM_JOB_NODELIST`` the comma list of the nodes and
``SLURMD_NODENAME`` the first (``scontrol show hostnames`` expands the list, no controller
needed). The real ``current`` collector (``tools/build-otelcol``) runs under it; once every
target answered a first scrape, a window of a whole number of intervals (180 s; 45 s with
``--quick``) is measured: the collector's CPU (psutil user + system over the window, in cores;
the spread over one-second slices) and RSS (sampled every 100 ms, the peak). After one more
interval the collector is stopped and ``<job dir>/otel/metrics.jsonl`` read back: per target
(``service.instance.id`` of the scrape job), the ``up`` readings of 1 in the window against the
window's intervals, the failed ones (0), the missed scrapes (a gap between successful scrapes
longer than 1.5 intervals, counted over the window and its edges), and
``scrape_duration_seconds`` (p50/p99/max) against the interval and the timeout. Each synthetic
server counts the requests it answered in the window, an independent check. Runs: 8 and 64
nodes at 15 s (a per-node slope from the two) and 64 nodes at 5 s (a heavier variant). Only
loopback addresses are used; every wait is bounded and every server and process is stopped on
the way out.

What differs from a cluster: the Prometheus receiver sets no ``server.address`` for a loopback
host, so the config's ``host.name`` transform finds nothing to copy here (it still runs on every
resource); the exporters' values never change between scrapes; and the synthetic servers share
the machine's CPUs with the collector (the load average is printed with each run).
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families
from support import helpers
from support.e2e_job import Collector, collector_release
from support.e2e_services import TEXT_FORMAT, FixtureExporter, FixtureExposition

from nemo_gym.orchestration.executors.otel import (
    SubmitConfig,
    collector_step_script,
    write_collector_config,
)
from nemo_gym.orchestration.executors.otel._job_dir.delivery_report import signal_files
from nemo_gym.orchestration.executors.otel._job_dir.signal_file import SignalFile

from ._expositions import CPU_MODES, CPUS, DCGM_FIELDS, GPUS, dcgm_exporter, node_exporter
from .collector_load import MIB, Sampler, _slices, collector_binary

LINE = "current"
BENCHMARK = "aime25"
RUNS = ((8, 15), (64, 15), (64, 5))  # (nodes, scrape interval in seconds), in this order
GOAL_NODES, GOAL_INTERVAL = 64, 15
CPU_GOAL_CORES = 1.0
RSS_GOAL_MIB = 512
WINDOW_SECONDS = {False: 180, True: 45}  # a whole number of every run's interval
HOST = "127.0.0.71"  # the collector's listeners: an address no other benchmark or test uses
NODE_PREFIX = "127.0.1."  # node i (from 1) is 127.0.1.<i>
COLLECTOR_NODE_ADDRESS = "127.0.0.1"  # the first node's targets are localhost:<port>
BIND_ATTEMPTS = 5
FIRST_SCRAPE_SECONDS = 30  # the receiver's discovery settles in ~5 s; then one interval
MISSED_GAP = 1.5  # intervals between two successful scrapes that count as a missed scrape
TAIL_SECONDS = 3  # after one more interval: the closing scrape is in and flushed
SERVE_POLL_SECONDS = 0.5
HANDLER_TIMEOUT_SECONDS = 120  # an idle keep-alive connection's thread ends after this
TARGETS_SECONDS = 60
SCRAPE_METRICS = ("up", "scrape_duration_seconds", "scrape_samples_scraped")
KINDS = {"node": "node", "dcgm": "DCGM"}  # scrape job -> name in the rows; else the model
NS = 1_000_000_000


def _log(message: str) -> None:
    print(f"[scrape_load] {message}", file=sys.stderr, flush=True)


# -- the synthetic exporters ------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the scraper and a Go exporter use it
    timeout = HANDLER_TIMEOUT_SECONDS
    server: SyntheticExporter

    def do_GET(self) -> None:
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404)
            return
        zipped = "gzip" in self.headers.get("Accept-Encoding", "")
        body = self.server.gzipped if zipped else self.server.payload
        self.send_response(200)
        self.send_header("Content-Type", TEXT_FORMAT)
        if zipped:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.answered.append(time.monotonic())

    def log_message(self, format: str, *args: object) -> None:
        pass


class SyntheticExporter(ThreadingHTTPServer):
    """One exporter of one node: the same bytes at ``/metrics`` on ``host:port``."""

    daemon_threads = True

    def __init__(self, host: str, port: int, payload: bytes, gzipped: bytes) -> None:
        super().__init__((host, port), _Handler)
        self.payload, self.gzipped = payload, gzipped
        self.answered: list[float] = []  # time.monotonic() of every response sent
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": SERVE_POLL_SECONDS}, daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return self.server_port

    def answered_between(self, start: float, end: float) -> int:
        return sum(1 for t in list(self.answered) if start <= t < end)

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)


def _close_all(servers: Sequence[SyntheticExporter]) -> None:
    """Side by side: each shutdown waits up to one poll of its serving loop."""
    if servers:
        with ThreadPoolExecutor(max_workers=len(servers)) as pool:
            list(pool.map(SyntheticExporter.close, servers))


def _exporters(nodes: Sequence[str], payloads: Sequence[bytes]) -> list[SyntheticExporter]:
    """One exporter per node, all on one port the kernel picks for the first (on 127.0.0.1);
    a port another process holds on some node address is given up for a fresh one."""
    zipped = {id(p): gzip.compress(p) for p in payloads}
    for attempt in range(BIND_ATTEMPTS):
        servers: list[SyntheticExporter] = []
        try:
            for index, payload in enumerate(payloads):
                host = COLLECTOR_NODE_ADDRESS if index == 0 else nodes[index]
                port = servers[0].port if servers else 0
                servers.append(SyntheticExporter(host, port, payload, zipped[id(payload)]))
            return servers
        except OSError as exc:
            _close_all(servers)
            _log(f"binding the exporters failed ({exc}); attempt {attempt + 1}/{BIND_ATTEMPTS}")
    raise RuntimeError(f"no port free on all of {len(nodes)} node addresses")


# -- the job: config, targets, collector ------------------------------------------------------


def _config(root: Path, nodes: int, interval: int, ports: dict[str, int]) -> SubmitConfig:
    """The bundled example as a one-pool job of ``nodes`` nodes: the policy on the first."""
    mapping = yaml.safe_load(helpers.EXAMPLE.read_text(encoding="utf-8"))
    mapping["services"].pop("judge")
    mapping["services"]["policy"]["port"] = ports["policy"]
    (cluster,) = mapping["compute"].values()
    cluster["node_pools"] = {"main": {**cluster["node_pools"]["main"], "nodes": nodes}}
    mapping["job"]["output_path"] = str(root / "runs")
    mapping["otel"].update(
        endpoint=None,
        exporters=["file"],
        collector_version=collector_release(LINE),
        listen_host=HOST,
        scrape_interval_seconds=interval,
        node_metrics_port=ports["node"],
        gpu_metrics_port=ports["dcgm"],
    )
    return SubmitConfig.from_dict(mapping)


def write_node_targets(config: SubmitConfig, job_dir: Path, nodes: Sequence[str]) -> None:
    """The targets files as the job step's start writes them in a one-pool job on ``nodes``,
    run on the first (``tests/support/scrape_targets.py`` does it for a one-node job)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SLURMD_NODENAME": nodes[0],
        "SLURM_JOB_NODELIST": ",".join(nodes),
    }
    fragment = collector_step_script(config, BENCHMARK, str(job_dir))
    result = subprocess.run(
        ["bash", "-c", f"{fragment}\n_otel_collector_write_targets"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TARGETS_SECONDS,
        check=False,
    )
    if result.returncode:
        raise RuntimeError(f"writing the scrape targets failed: {result.stderr}")


def _written_targets(otel_dir: Path) -> dict[str, list[str]]:
    """Targets file stem -> the instances the job step wrote in it."""
    return {
        path.stem: [group["labels"]["instance"] for group in json.loads(path.read_text("utf-8"))]
        for path in sorted((otel_dir / "targets").glob("*.json"))
    }


def _scrape_settings(config_path: Path) -> tuple[float, float]:
    """The rendered scrape interval and timeout, in seconds (the same for every job)."""
    document = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    job = document["receivers"]["prometheus"]["config"]["scrape_configs"][0]
    return float(job["scrape_interval"].rstrip("s")), float(job["scrape_timeout"].rstrip("s"))


def _log_summary(path: Path) -> dict[str, Any]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    levels = {
        level: [line for line in lines if f"\t{level}\t" in line] for level in ("warn", "error")
    }
    return {
        "bytes": path.stat().st_size,
        "lines": len(lines),
        **{f"{level}s": len(found) for level, found in levels.items()},
        "first": [line[:300] for line in (levels["error"] + levels["warn"])[:5]],
    }


# -- reading the scrapes back -----------------------------------------------------------------


@dataclass
class Target:
    job: str
    instance: str
    readings: dict[str, list[tuple[int, float]]] = field(
        default_factory=lambda: {name: [] for name in SCRAPE_METRICS}
    )


def _attributes(resource: dict[str, Any]) -> dict[str, str]:
    return {
        a["key"]: str(next(iter(a.get("value", {}).values()), ""))
        for a in resource.get("attributes") or ()
    }


def read_scrapes(otel_dir: Path) -> dict[tuple[str, str], Target]:
    """(scrape job, instance) -> its ``up``, duration and sample-count readings."""
    targets: dict[tuple[str, str], Target] = {}
    for path in signal_files(otel_dir, "metrics"):
        for line in SignalFile(path).lines():
            for group in json.loads(line).get("resourceMetrics") or ():
                attributes = _attributes(group.get("resource") or {})
                instance = attributes.get("service.instance.id")
                if instance is None:
                    continue
                job = attributes.get("service.name.override", "")
                target = targets.setdefault((job, instance), Target(job, instance))
                for scope in group.get("scopeMetrics") or ():
                    for metric in scope.get("metrics") or ():
                        name = metric.get("name")
                        if name not in SCRAPE_METRICS or "gauge" not in metric:
                            continue
                        target.readings[name] += [
                            (
                                int(point.get("timeUnixNano") or 0),
                                float(point.get("asDouble", point.get("asInt", 0))),
                            )
                            for point in metric["gauge"].get("dataPoints") or ()
                        ]
    return targets


def _missed(successes: list[int], start: int, end: int, interval_ns: int) -> int:
    """Scrapes missed over the window: gaps longer than MISSED_GAP intervals between successful
    scrapes, the one before and the one after the window included (the window's edges stand in
    for them when there are none)."""
    before = [t for t in successes if t < start][-1:] or [start]
    after = [t for t in successes if t >= end][:1] or [end]
    times = [*before, *(t for t in successes if start <= t < end), *after]
    missed = 0
    for a, b in itertools.pairwise(times):
        if b - a > MISSED_GAP * interval_ns:
            missed += max(1, round((b - a) / interval_ns) - 1)
    return missed


def _kind(job: str) -> str:
    return KINDS.get(job, "model")


def _percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _analyse(
    targets: dict[tuple[str, str], Target],
    written: dict[str, list[str]],
    window: tuple[int, int],
    interval: float,
) -> dict[str, Any]:
    start, end = window
    interval_ns = int(interval * NS)
    expected = round((end - start) / interval_ns)
    job_of = {"node": "node", "dcgm": "dcgm"}
    expected_keys = {
        (job_of.get(stem, stem), instance)
        for stem, instances in written.items()
        for instance in instances
    }
    # The model services' scrape jobs are <component>/<service>; their files model-<service>.
    found_jobs = {job for job, _ in targets}
    for stem, instances in written.items():
        if stem.startswith("model-"):
            service = stem.removeprefix("model-")
            job = next((j for j in found_jobs if j.endswith(f"/{service}")), stem)
            expected_keys -= {(stem, i) for i in instances}
            expected_keys |= {(job, i) for i in instances}
    per_target: dict[str, dict[str, Any]] = {}
    durations: dict[str, list[float]] = {}
    samples: dict[str, set[float]] = {}
    for key in sorted(expected_keys | set(targets)):
        target = targets.get(key) or Target(*key)
        up = sorted(target.readings["up"])
        inside = [(t, v) for t, v in up if start <= t < end]
        successes = [t for t, v in up if v == 1]
        per_target[f"{key[0]} {key[1]}"] = {
            "written": key in expected_keys,
            "up": sum(1 for _, v in inside if v == 1),
            "failed": sum(1 for _, v in inside if v != 1),
            "missed": _missed(successes, start, end, interval_ns),
        }
        kind = _kind(key[0])
        durations.setdefault(kind, []).extend(
            v for t, v in target.readings["scrape_duration_seconds"] if start <= t < end
        )
        samples.setdefault(kind, set()).update(
            v for t, v in target.readings["scrape_samples_scraped"] if start <= t < end
        )
    ups = [t["up"] for t in per_target.values()]
    every = [v for values in durations.values() for v in values]
    return {
        "expected_per_target": expected,
        "targets_written": len(expected_keys),
        "targets_seen": len(set(targets) & expected_keys),
        "unexpected_targets": sorted(f"{j} {i}" for j, i in set(targets) - expected_keys),
        "up_min": min(ups, default=0),
        "up_max": max(ups, default=0),
        "failed": sum(t["failed"] for t in per_target.values()),
        "failed_targets": sorted(name for name, t in per_target.items() if t["failed"]),
        "missed": sum(t["missed"] for t in per_target.values()),
        "missed_targets": sorted(name for name, t in per_target.items() if t["missed"]),
        "duration_s": {
            "p50": _percentile(every, 50),
            "p99": _percentile(every, 99),
            "max": max(every, default=float("nan")),
            "readings": len(every),
            "max_by_kind": {kind: max(v, default=float("nan")) for kind, v in durations.items()},
        },
        "samples_scraped": {kind: sorted(v) for kind, v in samples.items()},
        "per_target": per_target,
    }


# -- one run ----------------------------------------------------------------------------------


def _wait_first_scrapes(counts: list[Any], interval: float) -> float:
    """Seconds until every server answered once (bounded: discovery, then one interval)."""
    began = time.monotonic()
    deadline = began + FIRST_SCRAPE_SECONDS + 2 * interval
    while not all(count() for count in counts):
        if time.monotonic() > deadline:
            missing = sum(1 for count in counts if not count())
            _log(f"{missing} of {len(counts)} targets not scraped after {deadline - began:.0f}s")
            break
        time.sleep(0.2)
    return time.monotonic() - began


@dataclass(frozen=True)
class Payloads:
    node: bytes
    dcgm: dict[str, bytes]  # node name -> its DCGM exposition (its own Hostname and UUIDs)
    series: dict[str, int]


def _payloads(nodes: Sequence[str]) -> Payloads:
    node = node_exporter()
    dcgm = {name: dcgm_exporter(name) for name in nodes}
    policy = FixtureExposition("vllm_metrics.txt")
    return Payloads(
        node=node.text().encode(),
        dcgm={name: exposition.text().encode() for name, exposition in dcgm.items()},
        series={
            "node": node.series,
            "dcgm": next(iter(dcgm.values())).series,
            "model": sum(len(f.samples) for f in text_string_to_metric_families(policy.text)),
        },
    )


def run(binary: Path, payloads: Payloads, nodes_count: int, interval: int, window: int) -> dict:
    nodes = [f"{NODE_PREFIX}{i}" for i in range(1, nodes_count + 1)]
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nemo-gym-otel-scrape-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        policy = FixtureExporter("vllm_metrics.txt")
        stack.callback(policy.close)
        node_servers = _exporters(nodes, [payloads.node] * nodes_count)
        stack.callback(_close_all, node_servers)
        dcgm_servers = _exporters(nodes, [payloads.dcgm[n] for n in nodes])
        stack.callback(_close_all, dcgm_servers)
        ports = {"policy": policy.port, "node": node_servers[0].port, "dcgm": dcgm_servers[0].port}
        config = _config(root, nodes_count, interval, ports)
        job_dir = root / "runs" / "gym-bench" / BENCHMARK
        config_path = write_collector_config(config, BENCHMARK, job_dir)
        write_node_targets(config, job_dir, nodes)
        otel_dir = config_path.parent
        written = _written_targets(otel_dir)
        home = root / "home"
        home.mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            config.otel.token_env: "bench-" + secrets.token_hex(12),
            "SLURM_JOB_ID": "4242",
        }
        log_path = root / "collector.log"
        collector = Collector(binary, config_path, env, job_dir, log_path, HOST)
        stack.callback(collector.kill)
        stack.callback(collector.stop)  # runs first: TERM, then the bounded wait
        collector.wait_healthy()
        sampler = Sampler(collector.process.pid)
        stack.callback(sampler.close)
        servers = [*node_servers, *dcgm_servers]
        warmup = _wait_first_scrapes(
            [lambda: policy.scrapes, *(lambda s=s: s.answered for s in servers)], interval
        )
        _log(f"{nodes_count} nodes every {interval}s: warm-up (first scrapes) {warmup:.1f}s")
        load = [os.getloadavg()[0]]
        start, start_ns, policy_start = sampler.now(), time.time_ns(), policy.scrapes
        log_start = log_path.stat().st_size
        time.sleep(window)
        end, end_ns, policy_end = sampler.now(), time.time_ns(), policy.scrapes
        log_window = log_path.stat().st_size - log_start
        load.append(os.getloadavg()[0])
        samples = [start, *sampler.between(start[0], end[0]), end]
        time.sleep(interval + TAIL_SECONDS)  # the scrape after the window closes its last gap
        exit_code = collector.stop()
        sampler.close()
        answered = {
            kind: [s.answered_between(start[0], end[0]) for s in group]
            for kind, group in (("node", node_servers), ("dcgm", dcgm_servers))
        }
        answered["model"] = [policy_end - policy_start]
        scrape_interval, scrape_timeout = _scrape_settings(config_path)
        parse_began = time.monotonic()
        targets = read_scrapes(otel_dir)
        metrics_bytes = sum(p.stat().st_size for p in signal_files(otel_dir, "metrics"))
        analysis = _analyse(targets, written, (start_ns, end_ns), scrape_interval)
        parse_s = time.monotonic() - parse_began
        slices = _slices(samples)
        result = {
            "nodes": nodes_count,
            "interval_s": scrape_interval,
            "timeout_s": scrape_timeout,
            "window_s": (end[0] - start[0]),
            "warmup_s": warmup,
            "targets": {stem: len(instances) for stem, instances in written.items()},
            "series_per_round": nodes_count * (payloads.series["node"] + payloads.series["dcgm"])
            + payloads.series["model"],
            "cores": (end[1] - start[1]) / (end[0] - start[0]),
            "cores_slices": slices,
            "cores_max_slice": max(slices.values),
            "peak_rss": max(s[2] for s in samples),
            "end_rss": end[2],
            "load_average_1m": load,
            "answered": answered,
            "collector_exit": exit_code,
            "collector_log": _log_summary(log_path),
            "log_bytes_per_hour": log_window / (end[0] - start[0]) * 3600,
            "metrics_file_bytes": metrics_bytes,
            "read_back_s": parse_s,
            "wall_s": time.monotonic() - began,
            **analysis,
        }
    _log(
        f"{nodes_count} nodes every {interval}s: {result['cores']:.2f} cores, "
        f"{result['peak_rss'] / MIB:.0f} MiB, up {result['up_min']}-{result['up_max']} of "
        f"{result['expected_per_target']}, {result['failed']} failed, {result['missed']} missed "
        f"({result['wall_s']:.0f}s)"
    )
    return result


# -- report -----------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _verdict(r: dict[str, Any]) -> tuple[bool, list[str]]:
    problems = []
    if r["targets_seen"] < r["targets_written"]:
        problems.append(f"{r['targets_written'] - r['targets_seen']} targets never in the file")
    if r["failed"]:
        problems.append(f"{r['failed']} failed scrapes")
    if r["missed"]:
        problems.append(f"{r['missed']} missed scrapes")
    if r["cores"] > CPU_GOAL_CORES:
        problems.append(f"{r['cores']:.2f} cores")
    if r["peak_rss"] > RSS_GOAL_MIB * MIB:
        problems.append(f"{r['peak_rss'] / MIB:.0f} MiB")
    return not problems, problems


def _rows(payloads: Payloads, runs: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], dict]:
    s = payloads.series
    node_kb, dcgm = len(payloads.node) / 1000, next(iter(payloads.dcgm.values()))
    rows = [
        (
            "scrape load: synthetic expositions (series)",
            f"node_exporter {s['node']:,} ({CPUS} CPUs x {len(CPU_MODES)} modes of "
            f"node_cpu_seconds_total and more; {node_kb:.0f} kB, "
            f"{len(gzip.compress(payloads.node)) / 1000:.0f} kB gzip), DCGM {s['dcgm']:,} "
            f"({GPUS} GPUs x {len(DCGM_FIELDS)} fields; {len(dcgm) / 1000:.0f} kB), "
            f"policy vLLM fixture {s['model']}",
        )
    ]
    goals: dict[str, bool] = {}
    for r in runs:
        n, interval = r["nodes"], r["interval_s"]
        prefix = f"scrape load, {n} nodes every {interval:.0f} s"
        low, high = r["cores_slices"].spread
        d = r["duration_s"]
        by_kind = ", ".join(f"{k} max {_ms(v)}" for k, v in sorted(d["max_by_kind"].items()))
        answered = ", ".join(
            f"{KINDS.get(kind, kind)} {min(v)}-{max(v)}" for kind, v in r["answered"].items()
        )
        scraped = ", ".join(
            f"{KINDS.get(kind, kind)} {'/'.join(f'{x:.0f}' for x in v)}"
            for kind, v in sorted(r["samples_scraped"].items())
        )
        met, problems = _verdict(r)
        goals[f"{n} nodes every {interval:.0f} s"] = met
        log = r["collector_log"]
        rows += [
            (
                f"{prefix}: targets, series",
                f"{r['targets_written']} targets ({', '.join(f'{k} {v}' for k, v in r['targets'].items())}), "
                f"{r['series_per_round']:,} series a round = {r['series_per_round'] / interval:,.0f}/s; "
                f"samples scraped per target: {scraped}",
            ),
            (
                f"{prefix}: collector CPU",
                f"{r['cores']:.3f} cores (1-s IQR {low:.2f}-{high:.2f}, max {r['cores_max_slice']:.2f}), "
                f"{r['cores'] / n * 1000:.1f} millicores per node",
            ),
            (
                f"{prefix}: collector RSS",
                f"peak {r['peak_rss'] / MIB:.0f} MiB (at the window's end {r['end_rss'] / MIB:.0f}), "
                f"{r['peak_rss'] / MIB / n:.2f} MiB per node",
            ),
            (
                f"{prefix}: scrapes in the {r['window_s']:.0f} s window, per target",
                f"up=1 {r['up_min']}-{r['up_max']} of {r['expected_per_target']}; "
                f"{r['failed']} failed ({len(r['failed_targets'])} targets); "
                f"{r['missed']} missed (gap > {MISSED_GAP} intervals); "
                f"{r['targets_seen']} of {r['targets_written']} targets in the file",
            ),
            (
                f"{prefix}: scrape_duration_seconds",
                f"p50 {_ms(d['p50'])}, p99 {_ms(d['p99'])}, max {_ms(d['max'])} of "
                f"{d['readings']:,} (interval {interval:.0f} s, timeout {r['timeout_s']:.0f} s); {by_kind}",
            ),
            (
                f"{prefix}: requests each exporter answered in the window",
                f"{answered} (expected {r['expected_per_target']})",
            ),
            (
                f"{prefix}: collector log, metrics file",
                f"{log['lines']:,} lines, {log['warns']} warn, {log['errors']} error, "
                f"{r['log_bytes_per_hour'] / 1e6:,.0f} MB/h in the window; "
                f"metrics.jsonl {r['metrics_file_bytes'] / 1e6:,.0f} MB; load average "
                f"{r['load_average_1m'][0]:.1f} -> {r['load_average_1m'][1]:.1f}",
            ),
            (
                f"{prefix}: goal (no missed scrape, <= 1 core, <= {RSS_GOAL_MIB} MiB)",
                ("met: " if met else "NOT met: ")
                + f"{r['cores']:.2f} cores, {r['peak_rss'] / MIB:.0f} MiB"
                + ("" if met else "; " + "; ".join(problems)),
            ),
        ]
    by = {(r["nodes"], r["interval_s"]): r for r in runs}
    small, large = by.get((8, GOAL_INTERVAL)), by.get((GOAL_NODES, GOAL_INTERVAL))
    if small and large:
        added = large["nodes"] - small["nodes"]
        cores = (large["cores"] - small["cores"]) / added
        rss = (large["peak_rss"] - small["peak_rss"]) / MIB / added
        rows.append(
            (
                f"scrape load: per added node ({small['nodes']} -> {large['nodes']} nodes, every {GOAL_INTERVAL} s)",
                f"{cores * 1000:+.2f} millicores, {rss:+.2f} MiB peak RSS; "
                f"at 0 nodes (extrapolated) {small['cores'] - small['nodes'] * cores:.3f} cores, "
                f"{small['peak_rss'] / MIB - small['nodes'] * rss:.0f} MiB",
            )
        )
    return rows, goals


def _jsonable(r: dict[str, Any]) -> dict[str, Any]:
    out = dict(r)
    out["cores_slices"] = r["cores_slices"].as_dict()
    out["peak_rss_mib"] = out.pop("peak_rss") / MIB
    out["end_rss_mib"] = out.pop("end_rss") / MIB
    out["per_target"] = {k: v for k, v in r["per_target"].items() if v["failed"] or v["missed"]}
    return out


def scrape_load(quick: bool) -> dict[str, Any]:
    binary = collector_binary(LINE)
    window = WINDOW_SECONDS[quick]
    payloads = _payloads([f"{NODE_PREFIX}{i}" for i in range(1, max(n for n, _ in RUNS) + 1)])
    runs = [run(binary, payloads, nodes, interval, window) for nodes, interval in RUNS]
    rows, goals = _rows(payloads, runs)
    return {
        "binary": str(binary),
        "line": LINE,
        "window_s": window,
        "series": payloads.series,
        "goals": goals,
        "runs": [_jsonable(r) for r in runs],
        "rows": rows,
    }
