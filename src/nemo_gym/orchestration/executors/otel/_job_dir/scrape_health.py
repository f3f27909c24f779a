"""Which scrape targets of a job never answered or stopped answering, per node.

A node without a DCGM exporter, a pool whose model server never started, an exporter that died
halfway: the collector goes on, and the job's data simply lacks those series. The Prometheus
receiver records every scrape's outcome as the ``up`` metric of the target's resource (1
answered, 0 did not), so the metrics file says, target by target, what was missing and from
when. The targets the job step wrote (``otel/targets/*.json``) add the ones that were never
scraped at all (the collector stopped first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._templating.scrape import TARGETS_DIR
from .json_values import (
    data_points,
    group_metrics,
    json_object,
    json_objects,
    parsed,
    point_value,
    unix_nano,
)
from .signal_file import LINE_LIMIT_BYTES, open_job_file

UP = "up"


@dataclass
class TargetHealth:
    """One target: where it ran, its scrape job, and what ``up`` said over the job."""

    node: str
    job: str
    instance: str
    readings: list[tuple[int, float]] = field(default_factory=list)  # (time ns, up)

    @property
    def state(self) -> str:
        """``up``, ``never up``, ``never scraped``, ``went down`` (and stayed down), or
        ``down for a while`` (it answered again later)."""
        values = [value for _, value in sorted(self.readings)]
        if not values:
            return "never scraped"
        if not any(values):
            return "never up"
        first_up = values.index(1.0) if 1.0 in values else 0
        later = values[first_up:]
        if all(later):
            return "up"
        return "went down" if not later[-1] else "down for a while"

    @property
    def down_since_unix_nano(self) -> int | None:
        """When the target last went down for good (``went down``), else None."""
        if self.state != "went down":
            return None
        ordered = sorted(self.readings)
        since = None
        for time, value in ordered:
            if not value and since is None:
                since = time
            elif value:
                since = None
        return since

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "job": self.job,
            "instance": self.instance,
            "state": self.state,
            "scrapes": len(self.readings),
            "failed_scrapes": sum(1 for _, value in self.readings if not value),
            "down_since_unix_nano": self.down_since_unix_nano,
        }


def _host(instance: str) -> str:
    return instance.rpartition(":")[0]


def up_readings(group: dict[str, Any], resource: dict[str, str]) -> list[tuple[int, float]] | None:
    """The (time in ns, value) of every ``up`` point of one resource group of a metrics line;
    None unless the group is a scraped target's (it names its instance) with an ``up`` gauge.
    Raises :class:`.json_values.UnexpectedJson` for a group of another shape."""
    if "service.instance.id" not in resource:
        return None
    ups = [m for m in group_metrics(group) if m.get("name") == UP and "gauge" in m]
    if not ups:
        return None
    return [
        (unix_nano(point), point_value(point, "asDouble", "asInt"))
        for metric in ups
        for point in data_points(metric, ("gauge",))
    ]


class ScrapeHealth:
    """Collects ``up`` readings while the delivery report streams the metrics files."""

    def __init__(self) -> None:
        self._targets: dict[str, TargetHealth] = {}

    def _target(self, instance: str, node: str, job: str) -> TargetHealth:
        """The target of ``instance``; what the collector's data says of its node and job wins
        over what the targets files imply (a file's name, the instance's host part)."""
        target = self._targets.get(instance)
        if target is None:
            target = self._targets[instance] = TargetHealth(node, job, instance)
        return target

    def observe(self, resource: dict[str, str], readings: list[tuple[int, float]]) -> None:
        """A scraped target's ``up`` readings (:func:`up_readings`) from one resource group."""
        instance = resource["service.instance.id"]
        target = self._target(instance, "", "")
        target.node = resource.get("host.name") or target.node or _host(instance)
        target.job = resource.get("service.name.override") or target.job
        target.readings += readings

    def expect_written_targets(self, otel_dir: Path) -> None:
        """Every target the job step wrote, so one never scraped is listed too."""
        for path in sorted((otel_dir / TARGETS_DIR).glob("*.json")):
            try:
                stream = open_job_file(path)  # a FIFO or a device: JobDirError
            except FileNotFoundError:
                continue
            with stream:
                text = stream.read(LINE_LIMIT_BYTES + 1)
            if len(text) > LINE_LIMIT_BYTES:
                continue  # not the step's file: it writes a few lines per node
            try:
                instances = [
                    json_object(entry.get("labels")).get("instance")
                    for entry in json_objects(parsed(text))
                ]
            except ValueError:
                continue  # not the step's file; the collector would have said so in its log
            for instance in instances:
                if isinstance(instance, str):
                    self._target(instance, _host(instance), path.stem)

    def targets(self) -> list[TargetHealth]:
        """Every target, by node, then job, then instance."""
        return sorted(self._targets.values(), key=lambda t: (t.node, t.job, t.instance))
