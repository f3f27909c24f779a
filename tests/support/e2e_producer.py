"""One of the job's own processes (a Gym server), instrumented with the real OpenTelemetry SDK.

Run as a script, one process per ``service.name``, with the environment of
``driver_telemetry_env`` plus ``OTEL_SERVICE_NAME``. As nemo-lens does, it sends traces and
metrics over OTLP/HTTP (``OTEL_EXPORTER_OTLP_ENDPOINT``) and logs over OTLP/gRPC
(``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT``); every exporter is configured from that environment alone.

Protocol with the test, one line each way:

1. it sends ``--rounds`` rounds of spans, log records and metric points, flushing after each,
   then prints its report (phase ``ready``);
2. it waits for a line on stdin, then sends one last batch, shuts every provider down (which
   flushes them) and prints its report again (phase ``done``).

A report lists exactly what the collector accepted: every span id, log body and metric point of
each export that the SDK's own exporter reported as a success.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExportResult
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    Histogram,
    MetricExportResult,
    PeriodicExportingMetricReader,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

SANDBOX_PROVIDER = "nemo.gym.sandbox.provider"
# Never exported on a timer: only the explicit flushes below export, so the report is exact.
NO_TIMER_MILLIS = 3_600_000

report: dict[str, list[Any]] = {"spans": [], "logs": [], "points": [], "failures": []}


class RecordingSpanExporter(OTLPSpanExporter):
    def export(self, spans):  # type: ignore[no-untyped-def]
        result = super().export(spans)
        if result is SpanExportResult.SUCCESS:
            report["spans"].extend(
                {
                    "span_id": f"{s.context.span_id:016x}",
                    "trace_id": f"{s.context.trace_id:032x}",
                    "name": s.name,
                }
                for s in spans
            )
        else:
            report["failures"].append(f"traces: {result}")
        return result


class RecordingLogExporter(OTLPLogExporter):
    def export(self, batch):  # type: ignore[no-untyped-def]
        result = super().export(batch)
        if result is LogRecordExportResult.SUCCESS:
            report["logs"].extend(str(item.log_record.body) for item in batch)
        else:
            report["failures"].append(f"logs: {result}")
        return result


class RecordingMetricExporter(OTLPMetricExporter):
    def export(self, metrics_data, timeout_millis=10_000, **kwargs):  # type: ignore[no-untyped-def]
        result = super().export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        if result is MetricExportResult.SUCCESS:
            report["points"].extend(_points(metrics_data))
        else:
            report["failures"].append(f"metrics: {result}")
        return result


def _points(metrics_data: Any) -> list[dict[str, Any]]:
    points = []
    for rm in metrics_data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                data = metric.data
                kind = (
                    "histogram"
                    if isinstance(data, Histogram)
                    else "sum"
                    if isinstance(data, Sum)
                    else "gauge"
                )
                for point in data.data_points:
                    value = point.count if kind == "histogram" else point.value
                    points.append(
                        {
                            "metric": metric.name,
                            "kind": kind,
                            "attributes": dict(point.attributes),
                            "time_unix_nano": point.time_unix_nano,
                            "value": float(value),
                        }
                    )
    return points


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, required=True, help="root spans per round")
    parser.add_argument("--logs", type=int, required=True, help="log records per round")
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--sandbox-provider", default=None)
    args = parser.parse_args()

    resource = Resource.create()  # service.name from OTEL_SERVICE_NAME
    service = resource.attributes["service.name"]

    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(RecordingSpanExporter()))
    tracer = tracer_provider.get_tracer("nemo_gym.e2e")

    reader = PeriodicExportingMetricReader(
        RecordingMetricExporter(), export_interval_millis=NO_TIMER_MILLIS
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    meter = meter_provider.get_meter("nemo_gym.e2e")
    rollouts = meter.create_counter("gym.rollouts", unit="1", description="Rollouts finished.")
    verify = meter.create_histogram(
        "gym.verify.duration", unit="s", description="Verification time."
    )
    in_flight = meter.create_up_down_counter("gym.rollouts.in_flight", unit="1")

    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(RecordingLogExporter()))
    log = logging.getLogger(f"nemo_gym.e2e.{service}")
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(LoggingHandler(level=logging.INFO, logger_provider=logger_provider))

    def send(tag: str, spans: int, logs: int) -> None:
        for i in range(spans):
            with tracer.start_as_current_span(f"rollout {tag}", attributes={"rollout.index": i}):
                with tracer.start_as_current_span(
                    "model.call", attributes={"gen_ai.request.model": "policy"}
                ):
                    pass
                if args.sandbox_provider:
                    with tracer.start_as_current_span(
                        "sandbox.exec", attributes={SANDBOX_PROVIDER: args.sandbox_provider}
                    ):
                        pass
            rollouts.add(1, {"split": "a" if i % 2 else "b"})
            verify.record(0.1 * (i + 1), {"verifier": "math"})
            in_flight.add(1 if i % 2 else -1)
        for i in range(logs):
            log.info("%s log %s #%d", service, tag, i)

    def flush() -> None:
        for flushed, what in (
            (tracer_provider.force_flush(), "traces"),
            (logger_provider.force_flush(), "logs"),
            (meter_provider.force_flush(), "metrics"),
        ):
            if not flushed:
                report["failures"].append(f"{what}: force_flush timed out")

    for round_number in range(args.rounds):
        send(f"round {round_number}", args.spans, args.logs)
        flush()
    print(json.dumps({"phase": "ready", "service": service, **report}), flush=True)

    sys.stdin.readline()
    # The last batch, flushed by the shutdown: the last thing this process sends before TERM.
    send("last", 1, 1)
    tracer_provider.shutdown()
    logger_provider.shutdown()
    meter_provider.shutdown()
    print(json.dumps({"phase": "done", "service": service, **report}), flush=True)


if __name__ == "__main__":
    main()
