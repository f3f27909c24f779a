"""The regular expressions the collector compiles, judged by Go's syntax (``go_regexp.py``).

Where the collector compiles one, read in each component's Go source at v0.141.0 and v0.161.0
and confirmed on both lines' binaries (a pattern that does not compile stops the collector):

- **when it reads the config**, whether a pipeline uses the component or not: a Prometheus
  receiver's relabel rules (``relabel_configs`` and ``metric_relabel_configs`` of each scrape
  config: ``regex``, compiled anchored as ``^(?s:<regex>)$`` by Prometheus's
  ``relabel.Regexp.UnmarshalYAML``). The OTTL functions' literal patterns are judged with the
  rest of the OTTL (``ottl_rules.py``).
- **when a pipeline builds the processor**; one no pipeline uses is never built, and not judged:
  the attributes and resource processors' ``extract`` ``pattern`` (``attraction.NewAttrProc``,
  which also wants a group and every group named: each names the attribute it fills); the
  ``regexp`` match blocks of the attributes processor in a traces or logs pipeline
  (``filterset``, ``filtermatcher``) and of the filter processor's ``spans``, ``metrics`` and
  ``logs`` in a pipeline of that signal; the redaction processor's ``blocked_values``,
  ``allowed_values``, ``blocked_key_patterns`` and ``ignored_key_patterns``
  (``makeRegexList``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .._common.errors import Violation, dotted
from .go_regexp import GoRegexpError, check_go_regexp, go_regexp_error
from .graph import component_type, pipelines_of, signal_of

# A match block's lists of patterns, and its lists of entries whose values are patterns
# (filterconfig MatchProperties and MetricMatchProperties, filterprocessor LogMatchProperties).
_PATTERN_LISTS = (
    "services",
    "span_names",
    "span_kinds",
    "log_bodies",
    "log_severity_texts",
    "metric_names",
    "bodies",
    "severity_texts",
)
_VALUED_LISTS = ("attributes", "resources", "resource_attributes", "record_attributes")
# processor type -> pipeline signal -> the blocks of match properties it builds there.
_MATCH_BLOCKS = {
    "attributes": {"traces": ((),), "logs": ((),)},
    "filter": {"traces": (("spans",),), "metrics": (("metrics",),), "logs": (("logs",),)},
}
_REDACTION_LISTS = (
    "blocked_values",
    "allowed_values",
    "blocked_key_patterns",
    "ignored_key_patterns",
)
_RELABEL_LISTS = ("relabel_configs", "metric_relabel_configs")


def regexp_violations(config: Mapping[str, Any]) -> list[Violation]:
    """Every pattern of the config that the collector would fail to compile, by its YAML path;
    and every extract pattern without the named groups it needs."""
    found = list(_relabel_regexps(config))
    processors = config.get("processors")
    if not isinstance(processors, Mapping):
        return found
    built: dict[str, set[str]] = {}  # processor id -> signals of the pipelines using it
    for pipeline_id, pipeline in pipelines_of(config).items():
        used = pipeline.get("processors")
        for component_id in used if isinstance(used, list) else []:
            built.setdefault(str(component_id), set()).add(signal_of(pipeline_id))
    for component_id, signals in sorted(built.items()):
        body = processors.get(component_id)
        if not isinstance(body, Mapping):
            continue
        kind = component_type(component_id)
        where = ["processors", component_id]
        if kind in ("attributes", "resource"):
            found.extend(
                _extract_patterns(where, body, "actions" if kind == "attributes" else "attributes")
            )
        if kind == "redaction":
            for key in _REDACTION_LISTS:
                found.extend(_each_pattern([*where, key], body.get(key)))
        blocks = _MATCH_BLOCKS.get(kind, {})
        for prefix in sorted({p for s in signals for p in blocks.get(s, ())}):
            section = _at(body, prefix)
            for side in ("include", "exclude"):
                match = _at(section, (side,))
                if isinstance(match, Mapping) and match.get("match_type") == "regexp":
                    found.extend(_match_patterns([*where, *prefix, side], match))
    return found


def _at(body: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        body = body.get(key) if isinstance(body, Mapping) else None
    return body


def _uncompiled(path: list[Any], error: str) -> Violation:
    return Violation(
        dotted(path),
        f"is not a regular expression Go compiles ({error}), and the collector refuses to "
        "start; Go's syntax (RE2) has no lookarounds or backreferences",
    )


def _refusal(path: list[Any], pattern: str, anchored: bool = False) -> Violation | None:
    error = go_regexp_error(f"^(?s:{pattern})$" if anchored else pattern)
    return None if error is None else _uncompiled(path, error)


def _each_pattern(path: list[Any], patterns: Any) -> Iterator[Violation]:
    for index, pattern in enumerate(patterns if isinstance(patterns, list) else []):
        if isinstance(pattern, str) and (found := _refusal([*path, index], pattern)):
            yield found


def _match_patterns(path: list[Any], match: Mapping[str, Any]) -> Iterator[Violation]:
    for key in _PATTERN_LISTS:
        yield from _each_pattern([*path, key], match.get(key))
    for key in (*_VALUED_LISTS, "libraries"):
        entries = match.get(key)
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            fields = ("name", "version") if key == "libraries" else ("value",)
            for name in fields:
                value = entry.get(name) if isinstance(entry, Mapping) else None
                if isinstance(value, str) and (found := _refusal([*path, key, index, name], value)):
                    yield found


def _extract_patterns(where: list[Any], body: Mapping[str, Any], key: str) -> Iterator[Violation]:
    actions = body.get(key)
    for index, action in enumerate(actions if isinstance(actions, list) else []):
        if not isinstance(action, Mapping) or str(action.get("action")).lower() != "extract":
            continue
        pattern = action.get("pattern")
        if not isinstance(pattern, str):
            continue
        path = [*where, key, index, "pattern"]
        try:  # read once: its groups are judged too
            captures = check_go_regexp(pattern)
        except GoRegexpError as exc:
            yield _uncompiled(path, str(exc))
            continue
        if captures.unnamed:
            yield Violation(
                dotted(path),
                f"has a group without a name at offset {captures.unnamed[0]}; the extract "
                "action makes an attribute of each group: name it (?P<name>...) or make it "
                "non-capturing (?:...)",
            )
        elif not any(captures.names):
            yield Violation(
                dotted(path),
                "has no named group; the extract action makes an attribute of each group: "
                "write one as (?P<name>...)",
            )


def _relabel_regexps(config: Mapping[str, Any]) -> Iterator[Violation]:
    receivers = config.get("receivers")
    if not isinstance(receivers, Mapping):
        return
    for component_id, body in receivers.items():
        if component_type(str(component_id)) != "prometheus":
            continue
        jobs = _at(body, ("config", "scrape_configs"))
        for number, job in enumerate(jobs if isinstance(jobs, list) else []):
            for key in _RELABEL_LISTS:
                rules = job.get(key) if isinstance(job, Mapping) else None
                for index, rule in enumerate(rules if isinstance(rules, list) else []):
                    regex = rule.get("regex") if isinstance(rule, Mapping) else None
                    path = ["receivers", component_id, "config", "scrape_configs", number, key]
                    if isinstance(regex, str) and (
                        found := _refusal([*path, index, "regex"], regex, anchored=True)
                    ):
                        yield found
