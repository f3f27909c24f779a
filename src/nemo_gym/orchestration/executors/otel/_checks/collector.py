"""Checking a collector config: the only place that knows the order of the checks.

Keys that are not strings come first (a JSON Schema speaks only of string keys), then the line's
schema, then the graph rules, which run only on a config of the right shape (on a wrong one
they would repeat the schema's findings). ``validate_collector_config`` is the public entry for
any collector YAML, hand-written too.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._common.errors import CollectorConfigError, Violation
from .._common.json_schema import violations as schema_violations
from .._common.resources import load_schema
from .._templating.catalogue import Line, search_path, template_set
from .graph import graph_violations, key_and_expansion_violations

_TYPE = re.compile(r"^\^([A-Za-z0-9_]+)\(")


@functools.cache
def component_signals(schema_name: str) -> dict[str, frozenset[str]]:
    """Type -> the signals it handles, from the ``x-signals`` of a line's generated schema (read
    from each component's metadata.yaml by tools/generate-collector-schemas)."""
    signals = {}
    for section in load_schema(schema_name).get("properties", {}).values():
        for pattern, target in (section.get("patternProperties") or {}).items():
            found = _TYPE.match(pattern)
            if found and "x-signals" in target:
                signals[found[1]] = frozenset(target["x-signals"])
    return signals


def check_collector_config(config: Any, line: Line, source: str = "collector config") -> None:
    """Raise :class:`CollectorConfigError` listing every problem of a parsed config, judged by
    ``line``'s schema and component names."""
    if not isinstance(config, Mapping):
        raise CollectorConfigError(
            [Violation("", "a collector config must be a YAML mapping of sections")], source
        )
    keys, expansions = key_and_expansion_violations(config)
    if keys:
        problems = keys + expansions
    else:
        problems = schema_violations(config, line.schema)
        if problems:
            problems += expansions
        else:
            problems = sorted(
                {
                    *expansions,
                    *graph_violations(config, line.names, component_signals(line.schema)),
                },
                key=lambda v: v.path,
            )
    if problems:
        raise CollectorConfigError(problems, source)


def validate_collector_config(
    text: str,
    collector_version: str | None = None,
    *,
    source: str = "collector config",
    template_dirs: Sequence[str | os.PathLike[str]] | None = None,
) -> None:
    """Check collector YAML against the schema of the line for ``collector_version``.

    None checks against the newest line. The lines are those rendering sees: ``template_dirs``
    (else ``NEMO_GYM_OTEL_TEMPLATE_PATH``) before the built-in ones. Raises :class:`CollectorConfigError` with every
    violation, one per line as ``<yaml path>: <message>``; a YAML syntax error names its line.
    """
    from .._common.yaml_loader import parse_yaml

    line = template_set(search_path(template_dirs)).line_for(collector_version)
    parsed = parse_yaml(
        text, source, lambda path, message: CollectorConfigError([Violation(path, message)], source)
    )
    check_collector_config(parsed, line, source)
