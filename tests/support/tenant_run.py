"""One short run of a collector config on the real collector, to see where the token went.

The config is run as written, except where it touches this machine: its listeners move to free
ports (other collectors may hold 4317/4318/13133), its own metrics are switched off (8888), the
OTLP/HTTP exporters point at the tenant-routing proxy, the file exporters and the disk queue's
storage into the run's folder. One span, one log record and one data point are sent with the OpenTelemetry SDK over
OTLP/HTTP; after the collector's TERM (it drains its batches and files on shutdown) the outcome says whether the token reached a file or the
collector's log (``leaked``) and whether the proxy got payloads without the tenant attribute,
which it drops without a word (``dropped``).
"""

from __future__ import annotations

import copy
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nemo_gym.orchestration.executors.otel._checks.hops import queue_hops
from nemo_gym.orchestration.executors.otel._render.drain_config import feature_gate_arguments

from . import helpers
from .e2e_backend import OtlpBackend, RoutingProxy
from .e2e_job import free_ports, wait_for
from .e2e_otlp import file_bytes

TOKEN_ENV = "OTEL_TOKEN"


@dataclass(frozen=True)
class Outcome:
    leaked: bool
    dropped: int
    kept: int


def _kind(component_id: str) -> str:
    return component_id.split("/", 1)[0]


def _localised(doc: dict[str, Any], out: Path, proxy_url: str) -> tuple[dict[str, Any], int, int]:
    doc = copy.deepcopy(doc)
    receivers = [r for r in doc.get("receivers") or {} if _kind(r) == "otlp"]
    health, *receiver_ports = free_ports(1 + len(receivers))
    hops = queue_hops(doc)  # the disk queue's exporter keeps sending to its own receiver
    ports = dict(zip(receivers, receiver_ports, strict=True))
    for receiver_id, port in ports.items():
        doc["receivers"][receiver_id] = {"protocols": {"http": {"endpoint": f"127.0.0.1:{port}"}}}
    http = next(port for receiver, port in ports.items() if receiver not in hops.values())
    for extension_id, body in (doc.get("extensions") or {}).items():
        if _kind(extension_id) == "health_check":
            doc["extensions"][extension_id] = {"endpoint": f"127.0.0.1:{health}"}
        elif _kind(extension_id) == "file_storage":  # the disk queue, in the run's folder
            queue = str(out.parent / extension_id.replace("/", "-"))
            compaction = {**(body or {}).get("compaction", {}), "directory": queue}
            doc["extensions"][extension_id] = {**body, "directory": queue, "compaction": compaction}
    for exporter_id, body in (doc.get("exporters") or {}).items():
        body = dict(body or {})
        if exporter_id in hops:
            body["endpoint"] = f"http://127.0.0.1:{ports[hops[exporter_id]]}"
        elif helpers.exports_to_backend(exporter_id):
            body["endpoint"] = proxy_url
            body["retry_on_failure"] = {"enabled": False}
        elif _kind(exporter_id) == "file":
            suffix = ".jsonl.zst" if body.get("compression") else ".jsonl"
            body["path"] = str(out / f"{exporter_id.replace('/', '-')}{suffix}")
        doc["exporters"][exporter_id] = body
    telemetry = doc.setdefault("service", {}).setdefault("telemetry", {}) or {}
    telemetry["metrics"] = {"level": "none"}
    doc["service"]["telemetry"] = telemetry
    return doc, http, health


def _send(port: int) -> None:
    """One span, one log record, one data point, through the SDK's OTLP/HTTP exporters."""
    from opentelemetry._logs import LogRecord
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    base = f"http://127.0.0.1:{port}"
    resource = Resource.create({"service.name": "tenant-run"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{base}/v1/traces")))
    with tracer_provider.get_tracer("tenant-run").start_as_current_span("work"):
        pass
    tracer_provider.shutdown()
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(
        SimpleLogRecordProcessor(OTLPLogExporter(f"{base}/v1/logs"))
    )
    logger_provider.get_logger("tenant-run").emit(LogRecord(body="hello"))
    logger_provider.shutdown()
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(f"{base}/v1/metrics"), export_interval_millis=60_000
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    meter_provider.get_meter("tenant-run").create_counter("runs").add(1)
    meter_provider.shutdown()


ARRIVAL_SECONDS = 10


def arrived(proxy: RoutingProxy) -> int:
    return sum(proxy.kept.values()) + sum(proxy.dropped.values())


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def run_config(binary: Path, doc: dict[str, Any], token: str, folder: Path) -> Outcome:
    out = folder / "out"
    out.mkdir(parents=True)
    backend = OtlpBackend()
    proxy = RoutingProxy(backend, token)
    log = folder / "collector.log"
    try:
        local, http, health = _localised(doc, out, proxy.url)
        config = folder / "collector.yaml"
        config.write_text(yaml.safe_dump(local), encoding="utf-8")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            TOKEN_ENV: token,
            "SLURM_JOB_ID": "4242",
            "HOME": str(folder),
        }
        with log.open("w") as sink:
            collector = subprocess.Popen(
                [str(binary), f"--config=file:{config}", *feature_gate_arguments(local)],
                env=env,
                stdout=sink,
                stderr=sink,
            )
            try:
                wait_for(lambda: _healthy(health) or collector.poll() is not None, 30, "health")
                assert collector.poll() is None, log.read_text(encoding="utf-8")[-2000:]
                _send(http)  # accepted once it returns
                # The disk queue keeps at TERM what it has not sent (the job step's stop drains
                # it afterwards): give the backend its three items before TERM, bounded.
                deadline = time.monotonic() + ARRIVAL_SECONDS
                while time.monotonic() < deadline and arrived(proxy) < 3:
                    time.sleep(0.1)
            finally:
                collector.terminate()
                collector.wait(timeout=60)
        written = "".join(file_bytes(p).decode("utf-8") for p in out.iterdir())
        leaked = token in written or token in log.read_text(encoding="utf-8")
        return Outcome(leaked, sum(proxy.dropped.values()), sum(proxy.kept.values()))
    finally:
        proxy.close()
        backend.close()
