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
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

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


def component_violations(config: Mapping[str, Any]) -> list[Violation]:
    found: list[Violation] = []
    for component_id, body in section_of(config, "processors").items():
        if component_type(str(component_id)) == "batch" and isinstance(body, Mapping):
            found.extend(_batch(component_id, body))
    for component_id, body in section_of(config, "receivers").items():
        if component_type(str(component_id)) == "prometheus" and isinstance(body, Mapping):
            found.extend(_prometheus(component_id, body))
    return found


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
