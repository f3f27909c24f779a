"""A Gym server that keeps pushing telemetry until the job ends, with the real OpenTelemetry SDK.

Run as a script with the environment of ``driver_telemetry_env`` plus ``OTEL_SERVICE_NAME``, as
``e2e_producer.py`` is (traces and metrics over OTLP/HTTP, logs over OTLP/gRPC), but on a clock
instead of a protocol: a span every ``--span-millis``, a log record every other span, a counter
read every ``--metric-millis``, each batch exported within ``--export-millis``, until SIGTERM.
It never waits for the collector, so it pushes through the collector's stop and whatever runs
after it, as a server whose driver ended does until its job step is torn down.

Every export the SDK's exporter reports as a success is appended at once as one JSON line to
``--report`` (``{"signal": ..., "time": ..., "items": [...]}``: span ids, log bodies, the counter's points),
so the file lists exactly what a collector accepted, even when this process is killed. On
SIGTERM it stops producing, shuts its providers down (their last exports fail once nothing
listens, bounded by ``OTEL_EXPORTER_OTLP_TIMEOUT``) and exits 0.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import threading
import time
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExportResult
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExportResult, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

COUNTER = "gym.pusher.ticks"
SCOPE = "nemo_gym.e2e"  # the scope e2e_tally counts the producers' points by


class Report:
    """The accepted items, one JSON line per successful export, written through at once."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def accepted(self, signal_name: str, items: list[Any]) -> None:
        with self._lock:
            self._file.write(
                json.dumps({"signal": signal_name, "time": time.time(), "items": items}) + "\n"
            )
            self._file.flush()


def recording_exporters(report: Report) -> tuple[Any, Any, Any]:
    """The SDK's own OTLP exporters, each reporting what its successful exports carried."""

    class Spans(OTLPSpanExporter):
        def export(self, spans):  # type: ignore[no-untyped-def]
            result = super().export(spans)
            if result is SpanExportResult.SUCCESS:
                report.accepted("traces", [f"{s.context.span_id:016x}" for s in spans])
            return result

    class Logs(OTLPLogExporter):
        def export(self, batch):  # type: ignore[no-untyped-def]
            result = super().export(batch)
            if result is LogRecordExportResult.SUCCESS:
                report.accepted("logs", [str(item.log_record.body) for item in batch])
            return result

    class Metrics(OTLPMetricExporter):
        def export(self, metrics_data, timeout_millis=10_000, **kwargs):  # type: ignore[no-untyped-def]
            result = super().export(metrics_data, timeout_millis=timeout_millis, **kwargs)
            if result is MetricExportResult.SUCCESS:
                report.accepted("metrics", _points(metrics_data))
            return result

    return Spans(), Logs(), Metrics()


def _points(metrics_data: Any) -> list[list[Any]]:
    """[metric, time_unix_nano, value] of every point of the counter."""
    return [
        [metric.name, point.time_unix_nano, float(point.value)]
        for rm in metrics_data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == COUNTER
        for point in metric.data.data_points
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--span-millis", type=int, default=25)
    parser.add_argument("--metric-millis", type=int, default=250)
    parser.add_argument("--export-millis", type=int, default=100)
    args = parser.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    report = Report(args.report)
    spans, logs, metrics = recording_exporters(report)
    resource = Resource.create()  # service.name from OTEL_SERVICE_NAME
    service = resource.attributes["service.name"]

    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        BatchSpanProcessor(spans, schedule_delay_millis=args.export_millis)
    )
    tracer = tracer_provider.get_tracer(SCOPE)
    reader = PeriodicExportingMetricReader(metrics, export_interval_millis=args.metric_millis)
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    ticks = meter_provider.get_meter(SCOPE).create_counter(COUNTER, unit="1")
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(
        BatchLogRecordProcessor(logs, schedule_delay_millis=args.export_millis)
    )
    log = logging.getLogger(f"nemo_gym.e2e.pusher.{service}")
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(LoggingHandler(level=logging.INFO, logger_provider=logger_provider))

    tick = 0
    while not stop.wait(args.span_millis / 1000):
        with tracer.start_as_current_span("push", attributes={"tick": tick}):
            pass
        if tick % 2 == 0:
            log.info("%s push #%d", service, tick)
        ticks.add(1)
        tick += 1
    tracer_provider.shutdown()
    logger_provider.shutdown()
    meter_provider.shutdown()


if __name__ == "__main__":
    main()
