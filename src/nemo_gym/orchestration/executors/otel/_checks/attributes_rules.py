"""What the attributes processor refuses when the collector builds it, beyond its schema.

A check of upstream that no JSON Schema can state (the same at v0.141.0 and v0.161.0; the
patterns themselves, an extract pattern's groups among them, are ``regexp_rules.py``'s):

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
    return list(_match_properties_by_signal(config, processors))


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
