"""The fleet's figures from its time series: pure functions, unit-tested on their own.

Times are ``time.monotonic()`` seconds. ``progress`` is the load generator's ``(t, accepted)``
(items the collectors had accepted by ``t``); ``delivered`` the backend's ``(t, distinct items
arrived)``, both sampled about once a second.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence

from ._fleet_backend import Event


def accepted_by(progress: Sequence[tuple[float, int]], t: float) -> int:
    """Items accepted by ``t``: the last reading at or before it (0 before the first)."""
    index = bisect.bisect_right([p[0] for p in progress], t)
    return progress[index - 1][1] if index else 0


def drained_at(
    progress: Sequence[tuple[float, int]],
    delivered: Sequence[tuple[float, int]],
    since: float,
    lag: float,
) -> float | None:
    """The first reading from ``since`` on at which the backend held every item accepted
    ``lag`` seconds earlier (the pipeline's own latency); None if none did."""
    for t, count in delivered:
        if t >= since and count >= accepted_by(progress, t - lag):
            return t
    return None


def window_spread(times: Iterable[float], width: float = 1.0) -> int:
    """The most of ``times`` inside any window of ``width`` seconds: all of N in one window is
    lockstep, about N x width / (their range) is spread evenly."""
    ordered = sorted(times)
    most = 0
    for index, t in enumerate(ordered):
        most = max(most, bisect.bisect_right(ordered, t + width) - index)
    return most


def first_after(events: Iterable[Event], since: float, jobs: int) -> list[float]:
    """Seconds from ``since`` to each job's first request after it (jobs with none left out)."""
    first: dict[int, float] = {}
    for event in events:
        if event.t >= since and event.job is not None and event.job not in first:
            first[event.job] = event.t - since
    return sorted(first[job] for job in range(jobs) if job in first)


def peak_to_mean(times: Sequence[float], start: float, end: float, width: float = 1.0) -> float:
    """The busiest ``width``-second bin of requests over the mean bin, from ``start`` to ``end``:
    near 1 when requests arrive evenly, high when they come in waves."""
    bins = max(1, math.ceil((end - start) / width))
    counts = Counter(min(int((t - start) / width), bins - 1) for t in times if start <= t < end)
    if not counts:
        return 0.0
    return max(counts.values()) / (sum(counts.values()) / bins)


def statuses(events: Iterable[Event]) -> Counter[int]:
    """Requests per HTTP status."""
    return Counter(event.status for event in events)


def quantiles(values: Sequence[float]) -> dict[str, float]:
    """min, median, max (all 0 without values)."""
    if not values:
        return {"min": 0.0, "median": 0.0, "max": 0.0}
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}
