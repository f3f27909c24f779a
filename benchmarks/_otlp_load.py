"""The load generator: OTLP/HTTP protobuf in SDK-sized batches, at a paced rate, on loopback.

Run as its own process (``python -m benchmarks._otlp_load URL``) so that it never shares an
interpreter with the backend that counts what arrives. It builds a few distinct request bodies
per signal once, from the ``opentelemetry-proto`` messages directly (the SDK's tracer would cost
more CPU than the collector under test), then reads one JSON command per stdin line::

    {"rates": {"traces": 12000, "logs": 0, "metrics": 0}, "seconds": 6}

and answers one JSON line: the items the collector accepted (2xx, minus any partial-success
rejections) and refused per signal, the first errors, and when the last request finished. Each
signal's requests are due at evenly spaced instants; a few sender threads, each on its own
keep-alive connection like the SDK exporters of several processes, send each request when it is
due, or at once when they are behind.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import random
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from support.e2e_backend import ROUTES

SCOPE = "nemo-gym-otel.benchmark"  # the backend and the files count only this scope's items
BATCH = 512  # the SDK batch processors' max_export_batch_size
BODIES = 8  # distinct request bodies per signal, sent in turn
SENDERS = 4  # threads (connections) per signal
TIMEOUT_SECONDS = 10.0
# The OTLP/HTTP routes the tests' backend serves: signal -> path, request and response message.
PATHS = {signal: path for path, (signal, _, _) in ROUTES.items()}
REQUESTS = {signal: request for signal, request, _ in ROUTES.values()}
RESPONSES = {signal: response for signal, _, response in ROUTES.values()}
REJECTED = {
    "traces": "rejected_spans",
    "logs": "rejected_log_records",
    "metrics": "rejected_data_points",
}
SERVICES = ("gym-head-server", "gym-agent-server", "gym-resources-server")
SPAN_NAMES = ("agent.step", "model.call", "sandbox.start", "sandbox.exec", "verify", "tool.call")
PROVIDERS = ("ray", "docker", "")


def _kv(key: str, value: str | int | float | bool) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _resource(group: Any, service: str) -> None:
    """What the SDK of one of Gym's servers puts on its resource."""
    group.resource.attributes.extend(
        [
            _kv("service.name", service),
            _kv("telemetry.sdk.language", "python"),
            _kv("telemetry.sdk.name", "opentelemetry"),
            _kv("telemetry.sdk.version", "1.38.0"),
            _kv("host.name", "eos0142"),
            _kv("process.pid", 4000 + SERVICES.index(service)),
        ]
    )


def _scope(groups: Any, service: str, field: str) -> Any:
    """One resource (a Gym server's SDK) with one instrumentation scope, the generator's."""
    group = groups.add()
    _resource(group, service)
    scope = getattr(group, field).add()
    scope.scope.name = SCOPE
    return scope


def spans_body(rng: random.Random, service: str) -> bytes:
    request = REQUESTS["traces"]()
    scope = _scope(request.resource_spans, service, "scope_spans")
    now = time.time_ns()
    trace_id = rng.randbytes(16)
    for i in range(BATCH):
        if i % 16 == 0:  # a rollout's spans share a trace
            trace_id = rng.randbytes(16)
        start = now - rng.randrange(1, 30_000_000_000)
        provider = PROVIDERS[i % len(PROVIDERS)]
        span = scope.spans.add(
            trace_id=trace_id,
            span_id=rng.randbytes(8),
            parent_span_id=rng.randbytes(8) if i % 16 else b"",
            name=SPAN_NAMES[i % len(SPAN_NAMES)],
            kind=Span.SPAN_KIND_CLIENT if i % 3 else Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=start,
            end_time_unix_nano=start + rng.randrange(1_000_000, 20_000_000_000),
            status=Status(code=Status.STATUS_CODE_OK),
        )
        span.attributes.extend(
            [
                _kv("nemo.gym.rollout.id", f"aime25-{rng.randrange(10**6):06d}"),
                _kv("nemo.gym.benchmark", "aime25"),
                _kv("gen_ai.request.model", "qwen3-30b-a3b"),
                _kv("gen_ai.usage.output_tokens", rng.randrange(10, 8000)),
                _kv("http.request.method", "POST"),
                _kv("url.path", "/v1/chat/completions"),
                _kv("server.port", 8000),
            ]
        )
        if provider:
            span.attributes.append(_kv("nemo.gym.sandbox.provider", provider))
    return request.SerializeToString()


def logs_body(rng: random.Random, service: str) -> bytes:
    request = REQUESTS["logs"]()
    scope = _scope(request.resource_logs, service, "scope_logs")
    now = time.time_ns()
    for i in range(BATCH):
        rollout = rng.randrange(10**6)
        record = scope.log_records.add(
            time_unix_nano=now - i * 1_000_000,
            observed_time_unix_nano=now,
            severity_number=9,
            severity_text="INFO",
            trace_id=rng.randbytes(16),
            span_id=rng.randbytes(8),
        )
        record.body.string_value = (
            f"rollout aime25-{rollout:06d} finished: reward={rng.random():.3f} "
            f"output_tokens={rng.randrange(10, 8000)} turns={rng.randrange(1, 9)} "
            f"verify_seconds={rng.random() * 4:.2f}"
        )
        record.attributes.extend(
            [
                _kv("code.function", "finish_rollout"),
                _kv("code.lineno", 212),
                _kv("nemo.gym.rollout.id", f"aime25-{rollout:06d}"),
            ]
        )
    return request.SerializeToString()


def metrics_body(rng: random.Random, service: str) -> bytes:
    """512 points as an SDK's periodic reader sends them: counters, gauges and histograms."""
    request = REQUESTS["metrics"]()
    scope = _scope(request.resource_metrics, service, "scope_metrics")
    now = time.time_ns()
    start = now - 600_000_000_000
    bounds = [0.25, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800]
    series = 16  # attribute sets per metric
    kinds = ["sum"] * 12 + ["gauge"] * 12 + ["histogram"] * 8  # 32 metrics x 16 = 512 points
    for index, kind in enumerate(kinds):
        metric = scope.metrics.add(name=f"nemo_gym.bench.{kind}_{index}", unit="1")
        if kind == "sum":
            metric.sum.is_monotonic = True
            metric.sum.aggregation_temporality = (
                AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
            )
            points = metric.sum.data_points
        elif kind == "gauge":
            points = metric.gauge.data_points
        else:
            metric.histogram.aggregation_temporality = (
                AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
            )
            points = metric.histogram.data_points
        for s in range(series):
            point = points.add(start_time_unix_nano=start, time_unix_nano=now)
            point.attributes.extend(
                [_kv("nemo.gym.agent", f"agent-{s % 4}"), _kv("worker", f"w{s:02d}")]
            )
            if kind == "histogram":
                counts = [rng.randrange(0, 50) for _ in range(len(bounds) + 1)]
                point.count = sum(counts)
                point.sum = rng.random() * 1000
                point.explicit_bounds.extend(bounds)
                point.bucket_counts.extend(counts)
            elif kind == "sum":
                point.as_int = rng.randrange(10**6)
            else:
                point.as_double = rng.random() * 100
    return request.SerializeToString()


BUILDERS = {"traces": spans_body, "logs": logs_body, "metrics": metrics_body}


def export(
    connection: http.client.HTTPConnection, signal: str, body: bytes, items: int
) -> tuple[int, int, str | None]:
    """POST one request of ``items`` items: (accepted, refused, the error if any). A failed
    connection is closed, so the next request reconnects."""
    try:
        connection.request(
            "POST", PATHS[signal], body=body, headers={"Content-Type": "application/x-protobuf"}
        )
        response = connection.getresponse()
        payload = response.read()
    except (OSError, http.client.HTTPException) as exc:
        connection.close()
        return 0, items, f"{type(exc).__name__}: {exc}"
    if not 200 <= response.status < 300:
        return 0, items, f"HTTP {response.status}: {payload[:200]!r}"
    reply = RESPONSES[signal]()
    reply.ParseFromString(payload)
    rejected = getattr(reply.partial_success, REJECTED[signal])
    if rejected:
        error = f"partial success: {rejected} rejected ({reply.partial_success.error_message})"
        return items - rejected, rejected, error
    return items, 0, None


class Sender:
    """Sends one signal's scheduled requests and counts what the collector accepted."""

    def __init__(self, url: str, signal: str, bodies: list[bytes], rate: float, seconds: float):
        self.url = urlsplit(url)
        self.signal = signal
        self.bodies = bodies
        # Requests exactly BATCH / rate apart, as many as start within ``seconds``: the offered
        # rate is the nominal one even when ``rate * seconds`` is not a multiple of BATCH.
        self.interval = BATCH / rate
        self.requests = max(1, math.ceil(seconds / self.interval))
        self.accepted = 0
        self.refused = 0
        self.errors: list[str] = []
        self.max_late = 0.0
        self.last_done = 0.0
        self._next = 0
        self._lock = threading.Lock()

    def _take(self) -> int | None:
        with self._lock:
            if self._next >= self.requests:
                return None
            self._next += 1
            return self._next - 1

    def _post(self, connection: http.client.HTTPConnection, body: bytes) -> tuple[int, int]:
        """(accepted, refused) items of one request."""
        accepted, refused, error = export(connection, self.signal, body, BATCH)
        if error:
            self._error(error)
        return accepted, refused

    def _error(self, text: str) -> None:
        with self._lock:
            if len(self.errors) < 5:
                self.errors.append(text)

    def run(self, start: float) -> None:
        connection = http.client.HTTPConnection(
            self.url.hostname, self.url.port, timeout=TIMEOUT_SECONDS
        )
        try:
            while (index := self._take()) is not None:
                due = start + index * self.interval
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                with self._lock:
                    self.max_late = max(self.max_late, -delay)
                accepted, refused = self._post(connection, self.bodies[index % len(self.bodies)])
                with self._lock:
                    self.accepted += accepted
                    self.refused += refused
                    self.last_done = max(self.last_done, time.monotonic())
        finally:
            connection.close()


def run_step(url: str, bodies: dict[str, list[bytes]], command: dict[str, Any]) -> dict[str, Any]:
    seconds = float(command["seconds"])
    senders = [
        Sender(url, signal, bodies[signal], rate, seconds)
        for signal, rate in command["rates"].items()
        if rate > 0
    ]
    start = time.monotonic() + 0.05
    threads = [
        threading.Thread(target=sender.run, args=(start,), daemon=True)
        for sender in senders
        for _ in range(SENDERS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # A signal's rate as achieved: its items over the span its schedule allowed, or over the
    # time it really took when the collector held it back.
    return {
        "accepted": {s.signal: s.accepted for s in senders},
        "refused": {s.signal: s.refused for s in senders},
        "achieved": {
            s.signal: s.accepted / max(s.requests * s.interval, s.last_done - start)
            for s in senders
        },
        "errors": [e for s in senders for e in s.errors],
        "max_late_s": max((s.max_late for s in senders), default=0.0),
    }


def main(argv: list[str]) -> int:
    (url,) = argv
    rng = random.Random(int.from_bytes(os.urandom(8), "big"))
    bodies = {
        signal: [build(rng, SERVICES[i % len(SERVICES)]) for i in range(BODIES)]
        for signal, build in BUILDERS.items()
    }
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        print(json.dumps(run_step(url, bodies, json.loads(line))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
