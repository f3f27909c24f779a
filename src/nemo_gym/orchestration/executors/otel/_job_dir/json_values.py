"""JSON that the job directory holds, read back with every value checked as it is read.

The signal files, the collector's log, the drain records and the targets files hold what the
collector and the package wrote, but a line can also be something else that is still valid
JSON: a line another program appended, a record of another format or version, a file copied in
by hand, nesting deep enough to exhaust the parser. The readers report or skip such a line and
count nothing from it; it never ends ``report`` in a traceback, and never counts half. So they
take every value through these functions, which raise :class:`UnexpectedJson` (a ``ValueError``)
at the first value of the wrong type, and parse a whole line before they count from it.

Absent and ``null`` mean empty, as the collector omits empty fields. Lists of spans and log
records are only measured, not walked, so counting them stays as cheap as ``len``; data points
are walked, as their values are read.
"""

from __future__ import annotations

import json
import math
from typing import Any


class UnexpectedJson(ValueError):
    """JSON, but not of the shape its reader reads, or nested deeper than the parser goes."""


def parsed(text: str | bytes) -> Any:
    """``json.loads``, with nesting too deep for the parser raised as :class:`UnexpectedJson`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise UnexpectedJson from None


def whole_number(value: Any) -> int:
    """A count the collector or the package wrote: a JSON integer (``3.0`` too), not a string,
    a boolean, an infinity or NaN."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise UnexpectedJson


def json_object(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UnexpectedJson
    return value


def json_array(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise UnexpectedJson
    return value


def json_objects(value: Any) -> list[dict[str, Any]]:
    """An array of objects: resource groups, scope groups, metrics, data points."""
    return [json_object(item) for item in json_array(value) if item is not None]


def attributes(entries: Any) -> dict[str, str]:
    """``[{"key": k, "value": {"<type>Value": v}}]`` as ``{k: str(v)}``."""
    found = {}
    for entry in json_objects(entries):
        key = entry.get("key")
        if not isinstance(key, str):
            raise UnexpectedJson
        value = json_object(entry.get("value"))
        found[key] = str(next(iter(value.values()), ""))
    return found


def resource_attributes(group: dict[str, Any]) -> dict[str, str]:
    return attributes(json_object(group.get("resource")).get("attributes"))


def group_metrics(group: dict[str, Any]) -> list[dict[str, Any]]:
    """Every metric of a metrics line's resource group, across its scopes."""
    return [
        metric
        for scope in json_objects(group.get("scopeMetrics"))
        for metric in json_objects(scope.get("metrics"))
    ]


def metric_name(metric: dict[str, Any]) -> str:
    name = metric.get("name")
    if not isinstance(name, str):
        raise UnexpectedJson
    return name


def data_points(metric: dict[str, Any], kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """The points of the first of ``kinds`` the metric has (a metric has one kind)."""
    for kind in kinds:
        if kind in metric:
            return json_objects(json_object(metric[kind]).get("dataPoints"))
    return []


def unix_nano(point: dict[str, Any]) -> int:
    """``timeUnixNano``: a string of digits in OTLP JSON (a number is taken too)."""
    value = point.get("timeUnixNano") or 0
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UnexpectedJson
    try:
        return int(value)
    except ValueError:
        raise UnexpectedJson from None


def point_value(point: dict[str, Any], first: str, second: str) -> float:
    """The point's ``first`` value field, else its ``second``, else 0. OTLP JSON writes 64-bit
    integers as strings and non-finite doubles as "NaN" or "Infinity"."""
    value = point.get(first, point.get(second, 0))
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UnexpectedJson
    try:
        return float(value)
    except ValueError:
        raise UnexpectedJson from None


def counter_value(point: dict[str, Any]) -> float:
    """A counter's point (the collector's own): ``asInt``, else ``asDouble``; never infinite or
    NaN, which only a gauge's stale reading has."""
    value = point_value(point, "asInt", "asDouble")
    if not math.isfinite(value):
        raise UnexpectedJson
    return value
