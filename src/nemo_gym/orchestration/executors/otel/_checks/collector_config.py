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
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .._common.constants import DEFAULT_TOKEN_ENV
from .._common.errors import CollectorConfigError, CollectorConfigWarning, Violation, dotted
from .._common.json_schema import violations as schema_violations
from .._common.resources import load_schema
from .._templating.catalogue import Line, search_path, template_set
from .attributes_rules import attributes_violations
from .component_rules import component_violations
from .graph import graph_violations, scan_config, unused_components
from .ottl_rules import ottl_findings
from .regexp_rules import regexp_violations
from .secrets import credential_references
from .tenant import TenantPolicy, telemetry_warnings, tenant_violations

# The only variables a config may expand besides the token's: the job id, known only in the job.
JOB_ID_ENV = "SLURM_JOB_ID"

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


@functools.cache
def deprecated_names(schema_name: str) -> dict[tuple[str, str], str]:
    """(section, old type) -> the new type, for the aliases a line's collectors still load with a
    warning (``x-deprecated`` in its generated schema, from each component's metadata.yaml)."""
    found = {}
    for section, body in load_schema(schema_name).get("properties", {}).items():
        for pattern, target in (body.get("patternProperties") or {}).items():
            match = _TYPE.match(pattern)
            if match and "x-deprecated" in target:
                found[section, match[1]] = target["x-deprecated"]
    return found


# The sections a pipeline role's ids are defined in, the role's own first.
_ROLE_SECTIONS = {
    "receivers": ("receivers", "connectors"),
    "processors": ("processors",),
    "exporters": ("exporters", "connectors"),
}


def _canonical(
    config: Mapping[str, Any], schema_name: str
) -> tuple[Any, dict[tuple[str, str], str]]:
    """``config`` with every deprecated alias renamed to its new type (definitions, pipelines,
    ``service.extensions``), so the graph and tenant rules judge one name; and (section, new id)
    -> the id as written, to name it in messages. Each alias is warned of, with the new name.
    Renames are per section: the exporter ``otlp`` (now ``otlp_grpc``) leaves the receiver
    ``otlp`` beside it as it is."""
    aliases = deprecated_names(schema_name)
    renamed: dict[tuple[str, str], str] = {}
    sections = {}
    for section, body in config.items():
        if not isinstance(body, Mapping) or section == "service":
            continue
        entries = {}
        for component_id, value in body.items():
            kind, slash, name = str(component_id).partition("/")
            new = aliases.get((section, kind))
            if new is not None and f"{new}{slash}{name}" not in body:
                target = f"{new}{slash}{name}"
                renamed[section, target] = component_id
                warnings.warn(
                    CollectorConfigWarning(
                        Violation(
                            dotted([section, component_id]),
                            f"'{kind}' is the deprecated name of '{new}'; rename it to "
                            f"'{target}' (this line's collectors load the old name with a "
                            "warning, and a later release removes it)",
                        )
                    ),
                    stacklevel=4,
                )
                entries[target] = value
            else:
                entries[component_id] = value
        sections[section] = entries
    if not renamed:
        return config, {}
    canonical = {**config, **sections}
    service = config.get("service")
    if isinstance(service, Mapping):
        canonical["service"] = _renamed_service(service, config, _back(renamed))
    return canonical, renamed


def _back(renamed: Mapping[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    """(section, id as written) -> its new id."""
    return {(section, old): new for (section, new), old in renamed.items()}


def _renamed_service(
    service: Mapping[str, Any], config: Mapping[str, Any], back: Mapping[tuple[str, str], str]
) -> dict[str, Any]:
    def rename(refs: Any, sections: tuple[str, ...]) -> Any:
        if not isinstance(refs, list):
            return refs
        return [_new_id(ref, sections, config, back) for ref in refs]

    out = dict(service)
    if "extensions" in service:
        out["extensions"] = rename(service["extensions"], ("extensions",))
    pipelines = service.get("pipelines")
    if isinstance(pipelines, Mapping):
        out["pipelines"] = {
            pipeline_id: (
                {
                    role: rename(refs, _ROLE_SECTIONS.get(role, ()))
                    for role, refs in pipeline.items()
                }
                if isinstance(pipeline, Mapping)
                else pipeline
            )
            for pipeline_id, pipeline in pipelines.items()
        }
    return out


def _new_id(
    ref: Any,
    sections: tuple[str, ...],
    config: Mapping[str, Any],
    back: Mapping[tuple[str, str], str],
) -> Any:
    """A pipeline's reference renamed as the first of ``sections`` that defines it was."""
    for section in sections:
        body = config.get(section)
        if isinstance(body, Mapping) and ref in body:
            return back.get((section, ref), ref)
    return ref


def _as_written(violation: Violation, renamed: Mapping[tuple[str, str], str]) -> Violation:
    """A violation found on the canonical config, with the ids as the config writes them."""
    path, message = violation.path, violation.message
    for (_section, new), old in renamed.items():
        path = re.sub(rf"(?<![\w/]){re.escape(new)}(?![\w/])", old, path)
        message = message.replace(f"'{new}'", f"'{old}'")
    return Violation(path, message)


def _findings(
    config: Any, line: Line, source: str, policy: TenantPolicy | None
) -> tuple[list[Violation], list[Violation], list[Violation]]:
    """(problems of shape: schema, expansions, graph; breaches of the token and tenant rules;
    warnings) of a parsed config. Without a policy the tenant rules do not run."""
    if not isinstance(config, Mapping):
        raise CollectorConfigError(
            [Violation("", "a collector config must be a YAML mapping of sections")], source
        )
    token_env = (policy or TenantPolicy()).token_env
    scan = scan_config(config, frozenset({token_env, JOB_ID_ENV}), token_env, credential_references)
    if scan.keys:
        return scan.keys + scan.expansions, [], []
    problems = schema_violations(config, line.schema)
    if problems:
        return problems + scan.expansions, [], []
    canonical, renamed = _canonical(config, line.schema)
    back = _back(renamed)
    sites = [
        [p[0], back.get((p[0], p[1]), p[1]), *p[2:]] if len(p) > 1 else p for p in scan.token_sites
    ]
    graph = graph_violations(canonical, line.names, component_signals(line.schema))
    ottl, unread = ottl_findings(canonical, line.schema)
    graph += ottl + attributes_violations(canonical)
    graph += component_violations(canonical, line.names) + regexp_violations(canonical)
    tenant = tenant_violations(canonical, sites, policy, line.names["otlp_http"]) if policy else []
    found = [
        *unused_components(config),
        *(telemetry_warnings(config) if policy else ()),
        *(_as_written(v, renamed) for v in unread),
    ]
    shape = sorted({*scan.expansions, *(_as_written(v, renamed) for v in graph)}, key=_path)
    return shape, [_as_written(v, renamed) for v in tenant], found


def _path(violation: Violation) -> str:
    return violation.path


def check_collector_config(
    config: Any, line: Line, source: str = "collector config", policy: TenantPolicy | None = None
) -> list[Violation]:
    """Raise :class:`CollectorConfigError` listing every problem of a parsed config, judged by
    ``line``'s schema and component names and by the token and tenant rules of ``policy``;
    return the warnings of a config that passes (components no pipeline uses, no telemetry
    block). Without a policy only the shape and the graph are judged."""
    shape, tenant, found = _findings(config, line, source, policy)
    problems = sorted({*shape, *tenant}, key=_path) if tenant else shape
    if problems:
        raise CollectorConfigError(problems, source)
    return found


def check_for_graph(
    config: Any, line: Line, source: str, policy: TenantPolicy
) -> tuple[list[Violation], list[Violation]]:
    """``graph`` draws a config whose token goes astray, to show where: raise on problems of
    shape only, and return (breaches of the token and tenant rules, warnings) to be shown."""
    shape, tenant, found = _findings(config, line, source, policy)
    if shape:
        raise CollectorConfigError(shape, source)
    return sorted(set(tenant), key=_path), found


def load_collector_config(
    text: str,
    collector_version: str | None,
    source: str,
    template_dirs: Sequence[str | os.PathLike[str]] | None,
) -> tuple[Any, Line]:
    """The parsed YAML and the line that judges it (the newest for None), or a
    :class:`CollectorConfigError` naming the line of a YAML syntax error."""
    from .._common.yaml_loader import parse_yaml

    line = template_set(search_path(template_dirs)).line_for(collector_version)
    parsed = parse_yaml(
        text,
        source,
        lambda path, message: CollectorConfigError([Violation(path, message)], source),
        collector=True,
    )
    return parsed, line


def validate_collector_config(
    text: str,
    collector_version: str | None = None,
    *,
    source: str = "collector config",
    template_dirs: Sequence[str | os.PathLike[str]] | None = None,
    token_env: str = DEFAULT_TOKEN_ENV,
    listen_host: str = "localhost",
    endpoint: str | None = None,
    tenant_rules: bool = True,
    allow_plain_http: bool = False,
) -> list[Violation]:
    """Check collector YAML against the schema of the line for ``collector_version``, the graph
    rules, and (unless ``tenant_rules`` is false) the token and tenant rules for the token in
    ``token_env``, listening on ``listen_host``, sending (when given) only to ``endpoint``, over
    plain ``http://`` off the node only with ``allow_plain_http``. The warnings of a valid config
    (deprecated names, components no pipeline uses) are raised as
    :class:`CollectorConfigWarning`; those of the config itself are also returned as data.

    None checks against the newest line. The lines are those rendering sees: ``template_dirs``
    (else ``NEMO_GYM_OTEL_TEMPLATE_PATH``) before the built-in ones. Raises :class:`CollectorConfigError` with every
    violation, one per line as ``<yaml path>: <message>``; a YAML syntax error names its line.
    """
    parsed, line = load_collector_config(text, collector_version, source, template_dirs)
    policy = (
        TenantPolicy(token_env, listen_host, endpoint, allow_plain_http) if tenant_rules else None
    )
    found = check_collector_config(parsed, line, source, policy)
    for violation in found:  # raised like the deprecated names' warnings, and returned as data
        warnings.warn(CollectorConfigWarning(violation), stacklevel=2)
    return found
