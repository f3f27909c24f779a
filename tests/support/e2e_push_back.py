"""Reading a backend's push-back (429 or 503 with ``Retry-After``, ``RoutingProxy.push_back``):
log records with bodies of their own, counted by body, and the requests that reached the proxy
inside a delay it asked for. Shared by the job's and the drains' Retry-After tests."""

from __future__ import annotations

import secrets
from collections import Counter

from .e2e_backend import Arrival
from .e2e_otlp import post_json

IN_FLIGHT_SLACK = 1.0  # a request already on its way when the push-back was answered
TIMER_SLACK = 0.05  # the collector's timer against this process's clock


def post_logs(host: str, tag: str, records: int = 5) -> set[str]:
    """One OTLP/HTTP request of ``records`` log records to the collector on ``host``; their
    bodies, unique (the records' ids)."""
    bodies = {f"{tag}-{i}-{secrets.token_hex(4)}" for i in range(records)}
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "retry"}}]}
    logs = [{"body": {"stringValue": body}} for body in sorted(bodies)]
    post_json(
        host,
        "logs",
        {"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": logs}]}]},
    )
    return bodies


def bodies_of(items: list[object]) -> Counter[str]:
    return Counter(str(getattr(item, "body", "")) for item in items)


def taken(arrivals: list[Arrival]) -> Counter[str]:
    """The bodies of the requests the proxy did not push back, counted."""
    return bodies_of([i for a in arrivals if not a.pushed_back for i in a.items])


def inside_delays(arrivals: list[Arrival], retry_after: float) -> list[str]:
    """Requests that reached the backend inside a delay it asked for, past the slack."""
    found = []
    for i, refused in enumerate(arrivals):
        if not refused.pushed_back:
            continue
        for later in arrivals[i + 1 :]:
            gap = later.at - refused.at
            if IN_FLIGHT_SLACK < gap < retry_after - TIMER_SLACK:
                found.append(f"{gap:.2f}s after a {refused.pushed_back}")
    return found


def arrival_times(arrivals: list[Arrival], start: float) -> str:
    return ", ".join(f"{a.at - start:.2f}s:{a.pushed_back or 200}" for a in arrivals)
