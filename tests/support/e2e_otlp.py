"""OTLP data as the end-to-end tests compare it: one flat record per span, log record and point.

The backend receives protobuf; the file exporter writes OTLP-JSON. Both are decoded into the
official ``opentelemetry-proto`` messages and then flattened by the same code, so "the files hold
the same data as the backend" is a comparison of two multisets of records.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard
from google.protobuf import json_format
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData
from opentelemetry.proto.metrics.v1.metrics_pb2 import Metric, MetricsData
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from nemo_gym.orchestration.executors.otel import OTLP_HTTP_PORT
from nemo_gym.orchestration.executors.otel._job_dir.delivery_report import signal_files

SIGNALS = ("traces", "metrics", "logs")
FILE_MESSAGES = {"traces": TracesData, "metrics": MetricsData, "logs": LogsData}
# OTLP-JSON writes these bytes fields as hex, where the protobuf JSON mapping expects base64.
_HEX_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})
TENANT_ATTRIBUTE = "Authorization"


def value_of(value: AnyValue) -> Any:
    """An AnyValue as Python data; the type survives (a string job id is not an int)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes_of(value.kvlist_value.values)
    return getattr(value, kind)


def attributes_of(pairs: Iterable[KeyValue]) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs}


def frozen(mapping: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A hashable, typed form of an attribute map (``repr`` keeps 12 and "12" apart)."""
    return tuple(sorted((key, repr(value)) for key, value in mapping.items()))


@dataclass(frozen=True)
class Span:
    resource: dict[str, Any]
    scope: str
    trace_id: str
    span_id: str
    name: str
    attributes: dict[str, Any]
    wire: bytes  # the span message itself, serialized deterministically


@dataclass(frozen=True)
class LogRecord:
    resource: dict[str, Any]
    scope: str
    body: Any
    attributes: dict[str, Any]
    wire: bytes


@dataclass(frozen=True)
class Point:
    resource: dict[str, Any]
    scope: str
    metric: str
    kind: str  # gauge, sum, histogram, exponential_histogram, summary
    monotonic: bool | None  # sums only
    temporality: int | None  # sums and histograms
    unit: str
    attributes: dict[str, Any]
    time_unix_nano: int
    value: float | None  # gauge and sum value, histogram count
    bounds: tuple[float, ...]  # histogram explicit bounds
    wire: bytes


def spans_of(resource_spans: Iterable[Any]) -> Iterator[Span]:
    for rs in resource_spans:
        resource = attributes_of(rs.resource.attributes)
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield Span(
                    resource,
                    ss.scope.name,
                    span.trace_id.hex(),
                    span.span_id.hex(),
                    span.name,
                    attributes_of(span.attributes),
                    span.SerializeToString(deterministic=True),
                )


def logs_of(resource_logs: Iterable[Any]) -> Iterator[LogRecord]:
    for rl in resource_logs:
        resource = attributes_of(rl.resource.attributes)
        for sl in rl.scope_logs:
            for record in sl.log_records:
                yield LogRecord(
                    resource,
                    sl.scope.name,
                    value_of(record.body),
                    attributes_of(record.attributes),
                    record.SerializeToString(deterministic=True),
                )


def _metric_points(metric: Metric) -> tuple[str, Any, bool | None, int | None]:
    kind = metric.WhichOneof("data")
    data = getattr(metric, kind)
    monotonic = data.is_monotonic if kind == "sum" else None
    temporality = (
        data.aggregation_temporality
        if kind in ("sum", "histogram", "exponential_histogram")
        else None
    )
    return kind, data.data_points, monotonic, temporality


def _point_value(kind: str, point: Any) -> float | None:
    if kind in ("gauge", "sum"):
        return point.as_double if point.WhichOneof("value") == "as_double" else float(point.as_int)
    if kind in ("histogram", "exponential_histogram", "summary"):
        return float(point.count)
    return None


def points_of(resource_metrics: Iterable[Any]) -> Iterator[Point]:
    for rm in resource_metrics:
        resource = attributes_of(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind, points, monotonic, temporality = _metric_points(metric)
                for point in points:
                    yield Point(
                        resource,
                        sm.scope.name,
                        metric.name,
                        kind,
                        monotonic,
                        temporality,
                        metric.unit,
                        attributes_of(point.attributes),
                        point.time_unix_nano,
                        _point_value(kind, point),
                        tuple(getattr(point, "explicit_bounds", ())),
                        point.SerializeToString(deterministic=True),
                    )


def items_of(signal: str, resource_groups: Iterable[Any]) -> list[Any]:
    flatten = {"traces": spans_of, "metrics": points_of, "logs": logs_of}[signal]
    return list(flatten(resource_groups))


def resource_groups(signal: str, message: Any) -> Any:
    """``resource_spans`` / ``resource_metrics`` / ``resource_logs`` of a request or data message."""
    field = {"traces": "resource_spans", "metrics": "resource_metrics", "logs": "resource_logs"}[
        signal
    ]
    return getattr(message, field)


def comparable(item: Span | LogRecord | Point) -> tuple[Any, ...]:
    """What must match between backend and files: everything but the tenant attribute."""
    resource = {k: v for k, v in item.resource.items() if k != TENANT_ATTRIBUTE}
    extra = (item.metric, item.kind, item.unit) if isinstance(item, Point) else ()
    return (type(item).__name__, frozen(resource), item.scope, *extra, item.wire)


def _hex_ids_to_base64(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: base64.b64encode(bytes.fromhex(value)).decode()
            if key in _HEX_ID_KEYS and isinstance(value, str)
            else _hex_ids_to_base64(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids_to_base64(v) for v in node]
    return node


def parse_otlp_json(text: str, message_type: type) -> Any:
    """One OTLP-JSON object (a file exporter line, or a JSON request body) as a proto message."""
    return json_format.ParseDict(_hex_ids_to_base64(json.loads(text)), message_type())


class ZstdFrames:
    """Decompresses a zstd stream fed in pieces, frame after frame (the collector finishes one
    every second): the tests' own reader, the zstandard library's, not the package's. A frame
    still being written yields what its finished blocks hold."""

    def __init__(self) -> None:
        self._frame: Any = None

    def decompress(self, data: bytes) -> bytes:
        parts = []
        while data:
            if self._frame is None:
                self._frame = zstandard.ZstdDecompressor().decompressobj()
            parts.append(self._frame.decompress(data))
            if self._frame.eof:
                data, self._frame = self._frame.unused_data, None
            else:
                data = b""
        return b"".join(parts)


def file_bytes(path: Path) -> bytes:
    """A signal file's bytes, decompressed where the collector compresses."""
    data = path.read_bytes()
    return ZstdFrames().decompress(data) if path.suffix == ".zst" else data


def read_jsonl(path: Path, signal: str) -> list[Any]:
    """Every record of a file exporter's ``<signal>.jsonl`` (or ``.jsonl.zst``), flattened; []
    when it does not exist."""
    if not path.exists():
        return []
    groups: list[Any] = []
    # A line being appended while the collector runs may be incomplete: only whole lines count.
    data = file_bytes(path)
    complete = data[: data.rfind(b"\n") + 1].decode("utf-8")
    for line in complete.splitlines():
        if line.strip():
            groups.extend(resource_groups(signal, parse_otlp_json(line, FILE_MESSAGES[signal])))
    return items_of(signal, groups)


def read_signal(otel_dir: Path, signal: str) -> list[Any]:
    """Every record of ``signal`` in a job's ``otel`` folder, whatever its files are called."""
    return [item for path in signal_files(otel_dir, signal) for item in read_jsonl(path, signal)]


def post_json(host: str, signal: str, body: dict[str, Any]) -> None:
    """One OTLP/HTTP request in JSON straight to the collector's receiver on ``host``, for a
    test that needs requests of a size and number the SDK would not send."""
    request = urllib.request.Request(
        f"http://{host}:{OTLP_HTTP_PORT}/v1/{signal}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200, answer.status
