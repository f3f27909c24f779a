"""What the attributes processor refuses when the collector builds it, beyond its schema.

Two checks of upstream that no JSON Schema can state (the same at v0.141.0 and v0.161.0):

- ``internal/coreinternal/attraction/attraction.go``, ``NewAttrProc``: an ``extract`` action's
  ``pattern`` needs at least one group, and every group named (``SubexpNames``): each names
  the attribute it fills, so an unnamed group has nowhere to go.
- ``internal/filter/filterconfig/config.go``, ``ValidateForSpans`` and ``ValidateForLogs``: the
  ``include``/``exclude`` match properties of a processor in a traces pipeline may not match on
  logs or metrics (``log_bodies``, ``log_severity_texts``, ``log_severity_number``,
  ``metric_names``), in a logs pipeline not on spans or metrics (``span_names``, ``services``,
  ``span_kinds``, ``metric_names``). The same body is accepted in one pipeline and refused in
  another, so this is a rule of the pipeline graph. The same functions refuse a match block
  (not null) that names nothing a signal can match on: in a traces pipeline one of
  ``services``, ``span_names``, ``attributes``, ``libraries``, ``resources`` or ``span_kinds``,
  in a logs pipeline one of ``attributes``, ``libraries``, ``resources``, ``log_bodies``,
  ``log_severity_texts``, ``log_severity_number`` or ``span_kinds`` (``ErrMissingRequired*``).
  Then ``filterspan``/``filterlog`` ``newExpr`` build a filter set of each name list used
  (``filterset.CreateFilterSet``) and ``filtermatcher.NewAttributesMatcher`` one of each
  attribute or resource entry with a value: each refuses a ``match_type`` other than ``strict``
  or ``regexp`` (as written; unset is none).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .._common.errors import Violation, dotted
from .graph import component_type, pipelines_of, signal_of

KIND = "attributes"
# signal -> the match properties ValidateForSpans / ValidateForLogs refuse for it.
_OTHER_SIGNALS_FIELDS = {
    "traces": ("log_bodies", "log_severity_texts", "log_severity_number", "metric_names"),
    "logs": ("span_names", "services", "span_kinds", "metric_names"),
}
# signal -> the name lists newExpr makes filter sets of (filterspan, filterlog).
_FILTERED_LISTS = {
    "traces": ("services", "span_names", "span_kinds", "libraries"),
    "logs": ("log_bodies", "log_severity_texts", "libraries"),
}
# signal -> the match properties of which ValidateForSpans / ValidateForLogs need one.
_NEEDED_FIELDS = {
    "traces": ("services", "span_names", "attributes", "libraries", "resources", "span_kinds"),
    "logs": (
        "attributes",
        "libraries",
        "resources",
        "log_bodies",
        "log_severity_texts",
        "log_severity_number",
        "span_kinds",
    ),
}


def attributes_violations(config: Mapping[str, Any]) -> list[Violation]:
    processors = config.get("processors")
    if not isinstance(processors, Mapping):
        return []
    found = []
    for component_id, body in processors.items():
        if component_type(str(component_id)) == KIND and isinstance(body, Mapping):
            found.extend(_extract_patterns(component_id, body))
    found.extend(_match_properties_by_signal(config, processors))
    return found


def _extract_patterns(component_id: str, body: Mapping[str, Any]) -> Iterator[Violation]:
    actions = body.get("actions")
    for index, action in enumerate(actions if isinstance(actions, list) else []):
        if not isinstance(action, Mapping) or str(action.get("action")).lower() != "extract":
            continue
        pattern = action.get("pattern")
        if not isinstance(pattern, str):
            continue
        named, unnamed = groups(pattern)
        where = dotted(["processors", component_id, "actions", index, "pattern"])
        if unnamed:
            yield Violation(
                where,
                f"has a group without a name at offset {unnamed[0]}; the extract action makes "
                "an attribute of each group: name it (?P<name>...) or make it non-capturing "
                "(?:...)",
            )
        elif not named:
            yield Violation(
                where,
                "has no named group; the extract action makes an attribute of each group: "
                "write one as (?P<name>...)",
            )


def groups(pattern: str) -> tuple[int, list[int]]:
    """(how many named groups, the offsets of the unnamed capturing ones) of a Go regular
    expression: escapes and character classes are skipped; ``(?P<n>`` and ``(?<n>`` are named,
    any other ``(?`` (flags, ``(?:``) captures nothing."""
    named, unnamed = 0, []
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            if pattern.startswith("[:", index):
                end = pattern.find(":]", index + 2)
                index = end + 2 if end >= 0 else index + 1
                continue
            in_class = char != "]"
        elif char == "[":
            in_class = True
            index += 1
            if pattern.startswith("^", index):
                index += 1
            if pattern.startswith("]", index):  # a leading ] is a literal
                index += 1
            continue
        elif char == "(":
            if not pattern.startswith("?", index + 1):
                unnamed.append(index)
            elif pattern.startswith(("?P<", "?<"), index + 1):
                named += 1
        index += 1
    return named, unnamed


def _match_properties_by_signal(
    config: Mapping[str, Any], processors: Mapping[str, Any]
) -> Iterator[Violation]:
    reported = set()
    for pipeline_id, pipeline in pipelines_of(config).items():
        signal = signal_of(pipeline_id)
        refused = _OTHER_SIGNALS_FIELDS.get(signal)
        used = pipeline.get("processors")
        if refused is None or not isinstance(used, list):
            continue
        for component_id in used:
            body = processors.get(component_id)
            if component_type(str(component_id)) != KIND or not isinstance(body, Mapping):
                continue
            for side in ("include", "exclude"):
                match = body.get(side)
                if not isinstance(match, Mapping):
                    continue
                needed = _NEEDED_FIELDS[signal]
                if (component_id, side) not in reported and all(
                    match.get(key) in (None, []) for key in needed
                ):
                    reported.add((component_id, side))
                    yield Violation(
                        dotted(["processors", component_id, side]),
                        f"names nothing to match {signal} on, and the processor is in the "
                        f"{signal} pipeline '{pipeline_id}'; set one of {', '.join(needed)}",
                    )
                if (component_id, side, "match_type") not in reported and _match_type_refused(
                    match, signal
                ):
                    reported.add((component_id, side, "match_type"))
                    yield Violation(
                        dotted(["processors", component_id, side, "match_type"]),
                        "must be strict or regexp (as written) where the block matches names, "
                        "libraries or attribute values; set match_type: strict",
                    )
                for key in refused:
                    value = match.get(key)  # lists count when not empty, as len() > 0 upstream
                    if value is None or value == [] or (component_id, side, key) in reported:
                        continue
                    reported.add((component_id, side, key))
                    yield Violation(
                        dotted(["processors", component_id, side, key]),
                        f"matches on what {signal} do not carry, and the processor is in the "
                        f"{signal} pipeline '{pipeline_id}'; remove {key} or use a separate "
                        "attributes processor in a pipeline of the signal it matches",
                    )


def _match_type_refused(match: Mapping[str, Any], signal: str) -> bool:
    if match.get("match_type") in ("strict", "regexp"):
        return False
    if any(match.get(key) not in (None, [], "") for key in _FILTERED_LISTS[signal]):
        return True
    return any(
        isinstance(entry, Mapping) and entry.get("value") is not None
        for key in ("attributes", "resources")
        for entry in (match.get(key) if isinstance(match.get(key), list) else [])
    )
