"""Medians with their spread, and the table every benchmark prints."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    """Repeated measurements of one quantity, in its own unit."""

    name: str
    unit: str
    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> tuple[float, float]:
        """The interquartile range: robust against the odd slow run on a shared machine."""
        if len(self.values) < 4:
            return min(self.values), max(self.values)
        q1, _, q3 = statistics.quantiles(self.values, n=4)
        return q1, q3

    def as_dict(self) -> dict[str, object]:
        low, high = self.spread
        return {
            "name": self.name,
            "unit": self.unit,
            "median": self.median,
            "q1": low,
            "q3": high,
            "runs": len(self.values),
        }


def time_calls(name: str, call: Callable[[], object], repeats: int, inner: int = 1) -> Sample:
    """Median milliseconds per call over ``repeats`` rounds of ``inner`` calls each."""
    values = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            call()
        values.append((time.perf_counter() - start) * 1000 / inner)
    return Sample(name, "ms", tuple(values))


def table(rows: list[tuple[str, str]]) -> str:
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)


def describe(sample: Sample, digits: int = 3) -> str:
    low, high = sample.spread
    return f"{sample.median:.{digits}f} {sample.unit} (IQR {low:.{digits}f}-{high:.{digits}f}, n={len(sample.values)})"
