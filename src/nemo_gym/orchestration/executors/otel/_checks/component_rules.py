"""Components' own ``Validate`` rules that compare two values, which no JSON Schema can state.

The same at v0.141.0 and v0.161.0 (the ``validate`` probe of both lines' binaries found each):

- ``processor/batchprocessor/config.go``, ``Config.Validate``: a non-zero
  ``send_batch_max_size`` is at least ``send_batch_size`` (8192 when unset, ``factory.go``), and
  ``metadata_keys`` repeat no entry, compared in lower case. (A negative ``timeout`` is the
  schema's: ``collector/schema/common.yaml``.)
- prometheus ``config/config.go`` (v0.307.3 and v0.314.0, the receiver's ``go.mod``),
  ``Config.UnmarshalYAML`` and ``ScrapeConfig.Validate``: no two scrape jobs share a
  ``job_name``; a job's ``scrape_timeout`` is at most its ``scrape_interval`` (else the global
  one, else 1m), and the global timeout at most the global interval.
- ``internal/memorylimiter/config.go``, ``Config.Validate``: ``limit_mib`` or
  ``limit_percentage`` above zero; a non-zero limit above its spike limit; the soft-limited
  minimum GC interval (10s when unset) not below the hard-limited one; and at v0.161.0, where
  they exist, the maximum GC intervals not negative, each not below its minimum, the soft one
  not below the hard one when both are set.
- ``exporter/exporterhelper/internal/queuebatch/config.go``, ``BatchConfig.Validate``: a
  non-zero ``sending_queue.batch.max_size`` is at least ``min_size`` (8192 when unset,
  ``queue_sender.go``); at v0.161.0 a disabled queue is not checked (``configoptional``).
- ``config/configretry/backoff.go``: a non-zero ``retry_on_failure.max_elapsed_time`` (5m when
  unset) is not below ``initial_interval`` (5s) nor ``max_interval`` (30s); v1.47.0 checks only
  enabled retries (the negative bounds are the schema's).
- The gRPC OTLP exporter's ``endpoint``: ``exporter/otlpexporter/config.go`` (v0.141.0),
  ``Config.Validate``, and ``config/configgrpc/configgrpc.go`` (v1.67.0, at v0.161.0),
  ``ClientConfig.Validate``: after ``unix://`` a path; otherwise, without an ``http://`` or
  ``https://`` prefix (v0.141.0 also ``dns://`` or ``dns:///``; v0.161.0 the path of any
  ``scheme://`` URI), ``net.SplitHostPort`` must split it and the port be a decimal number.
  An endpoint with a ``${...}`` reference is not judged (the collector expands it first).

Where the lines differ, a line whose OTLP/HTTP exporter is ``otlp_http`` (its ``line.yaml``
names; the snake_case collectors, built and tested at v0.161.0) is checked as v0.161.0, any other
as v0.141.0. The rules read the gRPC exporter (``otlp_grpc`` there, ``otlp`` before the renames;
an alias is renamed before these rules run) and the line's OTLP/HTTP exporter.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from .._common.errors import Violation, dotted
from .graph import component_type, section_of

_DEFAULT_SEND_BATCH_SIZE = 8192  # batchprocessor factory.go, defaultSendBatchSize
_DEFAULT_SCRAPE_INTERVAL_MS = 60_000  # prometheus DefaultGlobalConfig.ScrapeInterval
# prometheus/common model.ParseDuration: units y w d h m s ms, each at most once, in order.
_PROM_DURATION = re.compile(
    r"(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?"
    r"(?:([0-9]+)ms)?\Z"
)
_UNIT_MS = (365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1)
_SECOND = 1_000_000_000
# Go time.ParseDuration: [sign] then number-unit pairs, a number with an optional fraction.
_GO_UNIT_NS = {"ns": 1, "us": 1000, "µs": 1000, "μs": 1000, "ms": 1_000_000, "s": _SECOND}
_GO_UNIT_NS.update({"m": 60 * _SECOND, "h": 3600 * _SECOND})
_GO_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
# exporter type -> whether the line checks as v0.161.0 does (True) or as v0.141.0 (False).
_SNAKE_CASE_HTTP = "otlp_http"  # the OTLP/HTTP role's type name on the snake_case line
_DEFAULT_QUEUE_BATCH_MIN_SIZE = 8192  # exporterhelper internal/queue_sender.go
# configretry NewDefaultBackOffConfig: initial_interval, max_interval, max_elapsed_time.
_RETRY_DEFAULTS = {"initial_interval": 5 * _SECOND, "max_interval": 30 * _SECOND}
_RETRY_DEFAULTS["max_elapsed_time"] = 300 * _SECOND
_SOFT_GC_DEFAULT = 10 * _SECOND  # memorylimiter NewDefaultConfig, min_gc_interval_when_soft_limited


def component_violations(config: Mapping[str, Any], names: Mapping[str, str]) -> list[Violation]:
    """``names``: the line's component role -> type name (its ``line.yaml``)."""
    current = names.get("otlp_http") == _SNAKE_CASE_HTTP
    grpc = "otlp_grpc" if current else "otlp"
    found: list[Violation] = []
    for component_id, body in section_of(config, "processors").items():
        if component_type(str(component_id)) == "batch" and isinstance(body, Mapping):
            found.extend(_batch(component_id, body))
        if component_type(str(component_id)) == "memory_limiter" and isinstance(body, Mapping):
            found.extend(_memory_limiter(component_id, body))
    for component_id, body in section_of(config, "receivers").items():
        if component_type(str(component_id)) == "prometheus" and isinstance(body, Mapping):
            found.extend(_prometheus(component_id, body))
    for component_id, body in section_of(config, "exporters").items():
        kind = component_type(str(component_id))
        if kind in (grpc, names.get("otlp_http")) and isinstance(body, Mapping):
            found.extend(_exporter_helper(component_id, body, current))
        if kind == grpc and isinstance(body, Mapping):
            found.extend(_grpc_endpoint(component_id, body, current))
    return found


def _memory_limiter(component_id: str, body: Mapping[str, Any]) -> Iterator[Violation]:
    where = ["processors", component_id]
    limit_mib = _number(body.get("limit_mib", 0))
    limit_pct = _number(body.get("limit_percentage", 0))
    if limit_mib == 0 and limit_pct == 0:
        key = "limit_mib" if "limit_mib" in body else "limit_percentage"
        yield Violation(
            dotted([*where, key]),
            "is 0, and so is the other limit; the collector refuses it: set limit_mib or "
            "limit_percentage above 0",
        )
    for limit, spike_key, unit in (
        (limit_mib, "spike_limit_mib", "limit_mib"),
        (limit_pct, "spike_limit_percentage", "limit_percentage"),
    ):
        spike = _number(body.get(spike_key, 0))
        if limit is not None and spike is not None and 0 < limit <= spike:
            yield Violation(
                dotted([*where, spike_key]),
                f"is {spike}, not below {unit} ({limit}); the collector refuses it: lower it "
                f"below {unit}",
            )
    soft = _go_duration(body.get("min_gc_interval_when_soft_limited", _SOFT_GC_DEFAULT))
    hard = _go_duration(body.get("min_gc_interval_when_hard_limited", 0))
    if soft is not None and hard is not None and soft < hard:
        yield Violation(
            dotted([*where, "min_gc_interval_when_soft_limited"]),
            "is shorter than min_gc_interval_when_hard_limited (the soft interval is 10s when "
            "unset); the collector refuses it: make it at least the hard one",
        )
    yield from _max_gc_intervals(where, body, soft, hard)


def _max_gc_intervals(
    where: list[Any], body: Mapping[str, Any], soft: int | None, hard: int | None
) -> Iterator[Violation]:
    """memorylimiter v0.161.0: the maximum GC intervals (0, the default, for none)."""
    maxima = {}
    for key, minimum, kind in (
        ("max_gc_interval_when_soft_limited", soft, "soft"),
        ("max_gc_interval_when_hard_limited", hard, "hard"),
    ):
        value = _go_duration(body.get(key, 0))
        maxima[kind] = value
        if value is not None and value < 0:
            yield Violation(dotted([*where, key]), "is negative; set 0 (no maximum) or more")
        elif value and minimum is not None and value < minimum:
            yield Violation(
                dotted([*where, key]),
                f"is shorter than min_gc_interval_when_{kind}_limited; the collector refuses "
                "it: make it at least the minimum, or 0 for no maximum",
            )
    if maxima["soft"] and maxima["hard"] and 0 < maxima["soft"] < maxima["hard"]:
        yield Violation(
            dotted([*where, "max_gc_interval_when_soft_limited"]),
            "is shorter than max_gc_interval_when_hard_limited; the collector refuses it: make "
            "it at least the hard one",
        )


def _exporter_helper(
    component_id: str, body: Mapping[str, Any], current: bool
) -> Iterator[Violation]:
    where = ["exporters", component_id]
    queue = body.get("sending_queue")
    if isinstance(queue, Mapping) and not (current and queue.get("enabled") is False):
        batch = queue.get("batch")
        if isinstance(batch, Mapping):
            smallest = _number(batch.get("min_size", _DEFAULT_QUEUE_BATCH_MIN_SIZE))
            largest = _number(batch.get("max_size", 0))
            if smallest is not None and largest is not None and 0 < largest < smallest:
                yield Violation(
                    dotted([*where, "sending_queue", "batch", "max_size"]),
                    f"is {largest}, below min_size ({smallest}"
                    f"{', its default' if 'min_size' not in batch else ''}); the collector "
                    "refuses it: raise it to at least min_size, or set 0 for no maximum",
                )
    retry = body.get("retry_on_failure")
    if isinstance(retry, Mapping) and (current or retry.get("enabled") is not False):
        spans = {key: _go_duration(retry.get(key, d)) for key, d in _RETRY_DEFAULTS.items()}
        elapsed = spans["max_elapsed_time"]
        for key in ("initial_interval", "max_interval"):
            span = spans[key]
            if elapsed is not None and span is not None and 0 < elapsed < span:
                yield Violation(
                    dotted([*where, "retry_on_failure", "max_elapsed_time"]),
                    f"is shorter than {key} ({_RETRY_DEFAULTS[key] // _SECOND}s when unset); the "
                    f"collector refuses it: make it at least {key}, or 0 to retry without end",
                )
                break


def _grpc_endpoint(
    component_id: str, body: Mapping[str, Any], current: bool
) -> Iterator[Violation]:
    endpoint = body.get("endpoint")
    if not isinstance(endpoint, str) or "$" in endpoint:
        return  # the collector expands ${...} before its Validate reads the endpoint
    where = dotted(["exporters", component_id, "endpoint"])
    if endpoint.startswith("unix://"):
        if endpoint == "unix://":
            yield Violation(where, "names no socket after unix://; add its path")
        return
    if not _otlp_sanitized(endpoint):
        yield Violation(where, "names no host after its scheme; write host:port")
        return
    address = _grpc_address(endpoint) if current else _otlp_sanitized(endpoint)
    if not address:
        return
    problem = _split_host_port(address)
    if problem is not None:
        yield Violation(
            where,
            f"{problem}; the collector refuses it: write host:port (e.g. localhost:4317, "
            "[::1]:4317) or dns:///host:port",
        )


def _otlp_sanitized(endpoint: str) -> str:
    """otlpexporter's sanitizedEndpoint (both lines): without http://, https:// or dns://(/)."""
    for prefix in ("http://", "https://"):
        if endpoint.startswith(prefix):
            return endpoint[len(prefix) :]
    return re.sub(r"^dns:///?", "", endpoint)


def _grpc_address(endpoint: str) -> str | None:
    """configgrpc v1.67.0 sanitizedEndpoint: the path of a scheme:// URI; None where this
    reading may differ from Go's url.Parse (no plain scheme, a % escape, a bracket or a
    control character), which is then not judged."""
    for prefix in ("http://", "https://"):
        if endpoint.startswith(prefix):
            return endpoint[len(prefix) :]
    if "://" not in endpoint:
        return endpoint
    if not re.match(r"[A-Za-z][A-Za-z0-9+.\-]*://[^%\[\]\x00-\x20\x7f]*\Z", endpoint):
        return None
    try:
        path = urlsplit(endpoint).path
    except ValueError:
        return None
    return path.removeprefix("/")


def _split_host_port(address: str) -> str | None:
    """Go net.SplitHostPort, then strconv.Atoi of the port: the problem, or None."""
    last = address.rfind(":")
    if last < 0:
        return "has no port"
    start, end = 0, 0
    if address.startswith("["):
        close = address.find("]")
        if close < 0:
            return "has a [ without its ]"
        if close + 1 == len(address):
            return "has no port"
        if close + 1 != last:
            return "has too many colons" if address[close + 1] == ":" else "has no port"
        start, end = 1, close + 1
    elif ":" in address[:last]:
        return "has too many colons (write an IPv6 address in brackets, [::1]:4317)"
    if "[" in address[start:] or "]" in address[end:]:
        return "has a stray [ or ]"
    port = address[last + 1 :]
    if not re.fullmatch(r"[+-]?[0-9]+", port) or not -(2**63) <= int(port) < 2**63:
        return "has a port that is not a number"
    return None


def _go_duration(value: Any) -> int | None:
    """A Go duration in nanoseconds (an integer is nanoseconds); None when not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str) or not value:
        return None
    sign = -1 if value[0] == "-" else 1
    text = value[1:] if value[0] in "+-" else value
    if text == "0":
        return 0
    total, at = Decimal(0), 0
    while at < len(text) or at == 0:
        part = _GO_PART.match(text, at)
        if part is None or part[1] in ("", "."):
            return None
        try:
            total += Decimal(part[1]) * _GO_UNIT_NS[part[2]]
        except InvalidOperation:
            return None
        at = part.end()
    return sign * int(total)


def _batch(component_id: str, body: Mapping[str, Any]) -> Iterator[Violation]:
    where = ["processors", component_id]
    size = _number(body.get("send_batch_size", _DEFAULT_SEND_BATCH_SIZE))
    largest = _number(body.get("send_batch_max_size"))
    if size is not None and largest is not None and 0 < largest < size:
        yield Violation(
            dotted([*where, "send_batch_max_size"]),
            f"is {largest}, below send_batch_size ({size}"
            f"{', its default' if 'send_batch_size' not in body else ''}); the collector refuses "
            "it: raise it to at least send_batch_size, or set 0 for no maximum",
        )
    keys = body.get("metadata_keys")
    seen: dict[str, int] = {}
    for index, key in enumerate(keys if isinstance(keys, list) else []):
        if not isinstance(key, str):
            continue
        if key.lower() in seen:
            yield Violation(
                dotted([*where, "metadata_keys", index]),
                f"repeats entry {seen[key.lower()]} (entries are compared in lower case); "
                "remove it",
            )
        seen.setdefault(key.lower(), index)


def _number(value: Any) -> int | None:
    """A Go integer option as mapstructure sets it (a float truncated); None for no number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return int(value) if abs(value) != float("inf") else None


def _prometheus(component_id: str, body: Mapping[str, Any]) -> Iterator[Violation]:
    prom = body.get("config")
    if not isinstance(prom, Mapping):
        return
    where = ["receivers", component_id, "config"]
    global_config = prom.get("global")
    global_config = global_config if isinstance(global_config, Mapping) else {}
    interval = _milliseconds(global_config.get("scrape_interval")) or _DEFAULT_SCRAPE_INTERVAL_MS
    timeout = _milliseconds(global_config.get("scrape_timeout"))
    if timeout is not None and timeout > interval:
        yield Violation(
            dotted([*where, "global", "scrape_timeout"]),
            "is longer than the global scrape_interval (1m when unset); the collector refuses it: "
            "shorten it or lengthen the interval",
        )
    jobs = prom.get("scrape_configs")
    names: dict[str, int] = {}
    for index, job in enumerate(jobs if isinstance(jobs, list) else []):
        if not isinstance(job, Mapping):
            continue
        here = [*where, "scrape_configs", index]
        job_interval = _milliseconds(job.get("scrape_interval")) or interval
        job_timeout = _milliseconds(job.get("scrape_timeout"))
        if job_timeout is not None and job_timeout > job_interval:
            yield Violation(
                dotted([*here, "scrape_timeout"]),
                "is longer than the job's scrape_interval (else the global one, else 1m); the "
                "collector refuses it: shorten it or lengthen the interval",
            )
        name = job.get("job_name")
        if isinstance(name, str):
            if name in names:
                yield Violation(
                    dotted([*here, "job_name"]),
                    f"is the job_name of scrape_configs[{names[name]}] too; give each job its "
                    "own name",
                )
            names.setdefault(name, index)


def _milliseconds(value: Any) -> int | None:
    """A Prometheus duration in milliseconds; None when unset, zero or not one (the schema's)."""
    if not isinstance(value, str):
        return None
    found = _PROM_DURATION.match(value)
    if found is None or not value:
        return None
    total = sum(
        int(n) * unit for n, unit in zip(found.groups(), _UNIT_MS, strict=True) if n is not None
    )
    return total or None
