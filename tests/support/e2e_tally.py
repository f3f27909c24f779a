"""What the job's producers sent against what a destination holds, item by item.

Shared by the collector-life and outage suites: spans by their unique ids, log records by body,
points by series, time and value, each keyed by the producer's own service.name (kept in
``service.name.override``), so the same job's runs, drains and destinations compare exactly.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .e2e_checks import OVERRIDE
from .e2e_job import PRODUCERS
from .e2e_life import LATE_PRODUCER, Life, Run
from .e2e_otlp import SIGNALS, frozen

PRODUCER_SCOPE = "nemo_gym.e2e"  # the producers' tracer and meter
SERVICES = {p.service_name for p in PRODUCERS} | {LATE_PRODUCER.service_name}


def sent(runs: list[Run]) -> dict[str, Counter[Any]]:
    reports = [report for run in runs for report in run.sent.values()]
    return {
        "traces": Counter((r["service"], s["span_id"]) for r in reports for s in r["spans"]),
        "logs": Counter((r["service"], body) for r in reports for body in r["logs"]),
        "metrics": Counter(
            (
                r["service"],
                p["metric"],
                p["kind"],
                frozen(p["attributes"]),
                p["time_unix_nano"],
                p["value"],
            )
            for r in reports
            for p in r["points"]
        ),
    }


def found(items: dict[str, list[Any]]) -> dict[str, Counter[Any]]:
    """The producers' own items among everything a destination holds."""
    ours = {s: [i for i in items[s] if i.resource.get(OVERRIDE) in SERVICES] for s in SIGNALS}
    return {
        "traces": Counter((s.resource[OVERRIDE], s.span_id) for s in ours["traces"]),
        "logs": Counter((r.resource[OVERRIDE], r.body) for r in ours["logs"]),
        "metrics": Counter(
            (
                p.resource[OVERRIDE],
                p.metric,
                p.kind,
                frozen(p.attributes),
                p.time_unix_nano,
                p.value,
            )
            for p in ours["metrics"]
            if p.scope == PRODUCER_SCOPE
        ),
    }


def in_files(life: Life) -> dict[str, list[Any]]:
    return {s: life.file_items(s) for s in SIGNALS}


def at_backend(life: Life) -> dict[str, list[Any]]:
    return {s: life.backend.items(s) for s in SIGNALS}


def assert_holds_exactly(
    got: dict[str, Counter[Any]], want: dict[str, Counter[Any]], where: str
) -> None:
    for s in SIGNALS:
        missing, unexpected = want[s] - got[s], got[s] - want[s]
        assert not missing and not unexpected, (
            f"{where} {s}: {sum(missing.values())} sent items missing, e.g. {list(missing)[:3]}; "
            f"{sum(unexpected.values())} unexpected, e.g. {list(unexpected)[:3]}"
        )


def count(items: dict[str, Counter[Any]]) -> str:
    return "/".join(str(sum(items[s].values())) for s in SIGNALS)
