"""Numbered items for the fleet: every span, log record and data point the load generator sends
carries a number of its own, so the backend can tell an item delivered twice from two items.

A job's items of one signal are numbered 1, 2, 3, ... in the order they are sent; the number
travels in a field the collector passes through untouched: a span's ``span_id`` and a log
record's ``span_id`` (8 bytes, big-endian), a data point's int attribute ``bench.item``. Which
job an item belongs to the backend reads from the request's token (each job has its own).

The bodies are cut from the collector benchmark's SDK-shaped batches (``_otlp_load``), so a
fleet job's requests look like a large job's, only fewer items at a time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from support.e2e_otlp import resource_groups

from ._otlp_load import BATCH, BUILDERS, REQUESTS, SCOPE, SERVICES

ID_ATTRIBUTE = "bench.item"
_SCOPES = {"traces": "scope_spans", "logs": "scope_logs", "metrics": "scope_metrics"}
_ITEMS = {"traces": "spans", "logs": "log_records"}


def templates(seed: int) -> dict[str, Any]:
    """One batch of ``BATCH`` items per signal, as messages to cut requests from."""
    rng = random.Random(seed)
    messages = {}
    for signal, build in BUILDERS.items():
        message = REQUESTS[signal]()
        message.ParseFromString(build(rng, SERVICES[seed % len(SERVICES)]))
        messages[signal] = message
    return messages


def _scopes(signal: str, message: Any) -> list[Any]:
    """The generator's scopes in a message (the collector adds scopes of its own)."""
    return [
        scope
        for group in resource_groups(signal, message)
        for scope in getattr(group, _SCOPES[signal])
        if scope.scope.name == SCOPE
    ]


def _points(metric: Any) -> Any:
    kind = metric.WhichOneof("data")
    return getattr(metric, kind).data_points if kind else []


def numbered_body(signal: str, template: Any, first: int, count: int) -> bytes:
    """A request of ``count`` items (at most ``BATCH``) cut from ``template``, numbered
    ``first`` to ``first + count - 1``."""
    if not 0 < count <= BATCH:
        raise ValueError(f"count must be 1 to {BATCH}, not {count}")
    message = REQUESTS[signal]()
    message.CopyFrom(template)
    (scope,) = _scopes(signal, message)
    number = first
    if signal in _ITEMS:
        items = getattr(scope, _ITEMS[signal])
        del items[count:]
        for item in items:
            item.span_id = number.to_bytes(8, "big")
            number += 1
        return message.SerializeToString()
    left = count
    for metric in scope.metrics:
        points = _points(metric)
        del points[left:]
        left -= len(points)
        for point in points:
            attribute = point.attributes.add(key=ID_ATTRIBUTE)
            attribute.value.int_value = number
            number += 1
    kept = [metric for metric in scope.metrics if len(_points(metric))]
    del scope.metrics[:]
    scope.metrics.extend(kept)
    return message.SerializeToString()


def item_numbers(signal: str, message: Any) -> list[int]:
    """The numbers of the generator's items in one request, as ``numbered_body`` set them."""
    numbers = []
    for scope in _scopes(signal, message):
        if signal in _ITEMS:
            numbers += [int.from_bytes(i.span_id, "big") for i in getattr(scope, _ITEMS[signal])]
            continue
        for metric in scope.metrics:
            for point in _points(metric):
                numbers += [a.value.int_value for a in point.attributes if a.key == ID_ATTRIBUTE]
    return numbers


def all_items(signal: str, message: Any) -> int:
    """Every item in a request, whatever its scope: what a backend's capacity is spent on."""
    count = 0
    for group in resource_groups(signal, message):
        for scope in getattr(group, _SCOPES[signal]):
            if signal in _ITEMS:
                count += len(getattr(scope, _ITEMS[signal]))
            else:
                count += sum(len(_points(metric)) for metric in scope.metrics)
    return count


def add_range(ranges: list[list[int]], first: int, end: int) -> None:
    """Add the numbers ``first`` to ``end - 1`` to sorted, disjoint ``[first, end)`` ranges,
    merging a range that touches the last one (numbers are sent in order)."""
    if ranges and ranges[-1][1] == first:
        ranges[-1][1] = end
    else:
        ranges.append([first, end])


@dataclass
class Tally:
    """How often each numbered item of each job and signal arrived."""

    counts: dict[tuple[int, str], bytearray] = field(default_factory=dict)
    twice: int = 0  # arrivals of an item that had arrived before

    def add(self, job: int, signal: str, numbers: list[int]) -> int:
        """Count one request's items; how many of them had arrived before."""
        seen = self.counts.setdefault((job, signal), bytearray())
        if numbers and max(numbers) >= len(seen):
            seen.extend(bytes(max(numbers) + 1 - len(seen) + 65_536))
        again = 0
        for number in numbers:
            if seen[number]:
                again += 1
            seen[number] = min(seen[number] + 1, 255)
        self.twice += again
        return again

    def unique(self) -> int:
        """Distinct items that arrived, over every job and signal."""
        return sum(len(seen) - seen.count(0) for seen in self.counts.values())

    def compare(self, accepted: dict[tuple[int, str], list[list[int]]]) -> dict[str, int]:
        """Against the numbers the collectors accepted: ``lost`` (accepted, never arrived),
        ``twice`` (arrivals beyond the first) and ``unasked`` (arrived, never accepted: the
        generator saw the request fail, yet the item got through)."""
        lost = unasked = 0
        for key in set(accepted) | set(self.counts):
            seen = self.counts.get(key, bytearray())
            wanted = bytearray(len(seen))
            for first, end in accepted.get(key, []):
                if end > len(wanted):
                    wanted.extend(bytes(end - len(wanted)))
                wanted[first:end] = b"\x01" * (end - first)
            seen = seen + bytes(len(wanted) - len(seen))
            lost += sum(1 for w, s in zip(wanted, seen, strict=True) if w and not s)
            unasked += sum(1 for w, s in zip(wanted, seen, strict=True) if s and not w)
        return {"lost": lost, "twice": self.twice, "unasked": unasked}
