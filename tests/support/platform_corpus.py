"""The platform components in configs, for judging the package against the platform collectors.

Each component of a line's platform manifest that the templates do not use is added to the
bundled example's default rendering with a realistic body and wired into a pipeline of a signal
it handles (extensions into ``service.extensions``); then each kind of mutation that applies to
it: an unknown option, a wrong type, a bad duration, a required key missing, an empty body. The
type names come from the line's generated schema, so a line that renames a component needs no
change here.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import helpers
from .collector_corpus import Case, base_document, dump

_TYPE = re.compile(r"^\^([a-z_0-9]+)\(")


@dataclass(frozen=True)
class Component:
    """A platform component: a valid body, the pipeline it joins, and the mutations that apply.

    ``mutations`` maps a mutation kind to (dotted path inside the body, value); a value of
    ``DELETE`` removes the key."""

    section: str
    body: dict[str, Any] | None
    signal: str | None  # None for an extension
    mutations: dict[str, tuple[str, Any]] = field(default_factory=dict)
    wrong_signal: str | None = None  # a signal it does not handle, for the "wrong-signal" case


DELETE = object()
# Keyed by the definition name of the component in the generated schemas (its Go module).
COMPONENTS: dict[str, Component] = {
    "core.processor.memorylimiterprocessor": Component(
        "processors",
        {"check_interval": "1s", "limit_mib": 1500, "spike_limit_mib": 300},
        "traces",
        {
            "type": ("limit_mib", "lots"),
            "duration": ("check_interval", "often"),
            "missing": ("check_interval", DELETE),
        },
    ),
    "contrib.processor.filterprocessor": Component(
        "processors",
        {
            "error_mode": "ignore",
            "logs": {"log_record": ["severity_number < SEVERITY_NUMBER_INFO"]},
        },
        "logs",
        {
            "type": ("logs.log_record", {"severity": 9}),
            "value": ("error_mode", "loud"),
            "ottl-syntax": ("logs.log_record[0]", "severity_number <"),
            "ottl-function": ("logs.log_record[0]", "NoSuchFunction(body)"),
        },
    ),
    "contrib.processor.attributesprocessor": Component(
        "processors",
        {"actions": [{"key": "team", "value": "ml", "action": "insert"}]},
        "traces",
        {"type": ("actions", {"key": "team"}), "value": ("actions[0].action", "smash")},
    ),
    "contrib.processor.probabilisticsamplerprocessor": Component(
        "processors",
        {"sampling_percentage": 25},
        "traces",
        {"type": ("sampling_percentage", "a quarter")},
        wrong_signal="metrics",
    ),
    "contrib.processor.redactionprocessor": Component(
        "processors",
        {"allow_all_keys": True, "blocked_values": ["4[0-9]{12}(?:[0-9]{3})?"]},
        "traces",
        {"type": ("blocked_values", "4[0-9]{12}")},
    ),
    "contrib.processor.cumulativetodeltaprocessor": Component(
        "processors",
        {"include": {"metrics": ["system.cpu.time"], "match_type": "strict"}},
        "metrics",
        {"type": ("include.metrics", "system.cpu.time"), "duration": ("max_staleness", "later")},
        wrong_signal="traces",
    ),
    "contrib.processor.deltatocumulativeprocessor": Component(
        "processors",
        {"max_stale": "5m", "max_streams": 10000},
        "metrics",
        {"type": ("max_streams", "many"), "duration": ("max_stale", "later")},
        wrong_signal="logs",
    ),
    "core.exporter.otlpexporter": Component(
        "exporters",
        {"endpoint": "collector.example:4317", "tls": {"insecure": True}, "timeout": "10s"},
        "traces",
        {
            "type": ("tls.insecure", ["yes"]),
            "duration": ("timeout", "soon"),
            "missing": ("endpoint", DELETE),
        },
    ),
    "contrib.extension.storage.filestorage": Component(
        "extensions",
        {"directory": "/tmp", "timeout": "1s"},
        None,
        {
            "type": ("fsync", ["yes"]),
            "duration": ("timeout", "soon"),
            "missing-directory": ("directory", "/nonexistent/otel-storage"),
        },
    ),
    "contrib.extension.bearertokenauthextension": Component(
        "extensions",
        {"token": "${env:OTEL_TOKEN}"},
        None,
        {"type": ("scheme", ["Bearer"])},
    ),
    "contrib.extension.pprofextension": Component(
        "extensions",
        {"endpoint": "localhost:1777"},
        None,
        {"type": ("block_profile_fraction", "some"), "value": ("endpoint", "port 1777")},
    ),
    "core.extension.zpagesextension": Component(
        "extensions",
        {"endpoint": "localhost:55679"},
        None,
        {"type": ("endpoint", 55679), "value": ("endpoint", "port 55679")},
    ),
}


@functools.cache
def schema(line: str) -> dict[str, Any]:
    path = helpers.REPO / "schemas" / f"collector-{line}.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))


def type_name(line: str, definition: str) -> str:
    """The type name a line's collectors register for a component, from its generated schema."""
    patterns = schema(line)["properties"][COMPONENTS[definition].section]["patternProperties"]
    for pattern, target in patterns.items():
        if target.get("$ref") == f"#/$defs/{definition}":
            match = _TYPE.match(pattern)
            assert match, pattern
            return match[1]
    raise LookupError(f"{definition} is not in the {line} schema")


def _path(path: str) -> list[Any]:
    keys: list[Any] = []
    for part in path.split("."):
        name, *indexes = part.split("[")
        keys.append(name)
        keys.extend(int(index.rstrip("]")) for index in indexes)
    return keys


def _mutate(body: dict[str, Any] | None, path: str, value: Any) -> dict[str, Any]:
    """A copy of ``body`` with ``value`` at the dotted ``path`` (``DELETE`` removes the key)."""
    result: Any = copy.deepcopy(body) or {}
    node = result
    keys = _path(path)
    for key in keys[:-1]:
        node = node[key]
    if value is DELETE:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return result


def with_component(
    line: str, definition: str, body: dict[str, Any] | None, signal: str | None = None
) -> str:
    """The example's rendering with the component added under ``<type>/platform`` and used in
    the ingest pipeline of ``signal`` (default: one it handles)."""
    component = COMPONENTS[definition]
    doc = base_document(line)
    identifier = f"{type_name(line, definition)}/platform"
    doc.setdefault(component.section, {})[identifier] = body
    service = doc["service"]
    if component.signal is None:
        service.setdefault("extensions", []).append(identifier)
    else:
        pipeline = service["pipelines"][f"{signal or component.signal}/ingest"]
        role = "processors" if component.section == "processors" else "exporters"
        pipeline.setdefault(role, []).append(identifier)
    return dump(doc)


def platform_cases(line: str) -> Iterator[Case]:
    for definition, component in COMPONENTS.items():
        name = type_name(line, definition)
        bodies = {
            "valid": component.body,
            "unknown-option": _mutate(component.body, "no_such_option", 1),
            **{
                kind: _mutate(component.body, *change)
                for kind, change in component.mutations.items()
            },
            "empty": None,
        }
        for kind, body in bodies.items():
            text = with_component(line, definition, body)
            yield Case(f"{line}/platform/{name}/{kind}", line, text, f"{line}-platform")
        if component.wrong_signal is not None:
            text = with_component(line, definition, component.body, component.wrong_signal)
            yield Case(f"{line}/platform/{name}/wrong-signal", line, text, f"{line}-platform")


def override_with_filter(line: str) -> str:
    """A platform team's override of the line's default template: a filter processor that drops
    debug logs in the logs pipeline, before they leave the job."""
    return (
        "{#- nemo-gym-otel\ntemplate_version: 1\nrequires_package: 0.1.0\n-#}\n"
        f'{{% extends "builtin/{line}/otlp_http+file.yaml.j2" %}}\n'
        "{% block processors %}{{ super() }}"
        "  filter/drop_debug:\n"
        "    error_mode: ignore\n"
        "    logs:\n"
        "      log_record:\n"
        "        - severity_number < SEVERITY_NUMBER_INFO\n"
        "{% endblock %}\n"
        "{% block pipelines %}{{ super() }}"
        "    logs/filtered:\n"
        "      receivers: [otlp]\n"
        "      processors: [filter/drop_debug]\n"
        "      exporters: [file/logs]\n"
        "{% endblock %}\n"
    )
