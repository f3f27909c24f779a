"""What a JSON Schema cannot express about a collector config.

The graph rules mirror what ``otelcol validate`` refuses when it builds the pipeline graph
(undefined references, connectors used on one side only or between signals they do not join,
components used with a signal they do not handle, cycles), plus one rule of this package: the
only ``${...}`` allowed are ``${env:<token_env>}`` and ``${env:SLURM_JOB_ID}``, because anything
else is either a typo that the collector would resolve to an empty string, a regular-expression
group that needed ``$$``, or a secret (``${env:AWS_SECRET_ACCESS_KEY}``, ``${file:...}``) that
would then reach the files.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._common.errors import Violation, dotted
from .._common.non_string_keys import non_string_key

SECTIONS = ("receivers", "processors", "exporters", "connectors", "extensions")
_ROLE_SECTIONS = {
    "receivers": ("receivers", "connectors"),
    "processors": ("processors",),
    "exporters": ("exporters", "connectors"),
}
ALL_SIGNALS = frozenset({"traces", "metrics", "logs"})

# (from, to) signal pairs each connector joins; the span-metrics connector's type name is the
# line's (``names.span_metrics`` in its line.yaml).
_FORWARD_PAIRS = frozenset((s, s) for s in ALL_SIGNALS)
_SPAN_METRICS_PAIRS = frozenset({("traces", "metrics")})
_EXPANSION = re.compile(r"\$\$|\$\{([^}]*)\}?")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_./-]{1,1024}")
_ENV_EXPANSION = re.compile(r"env:([a-zA-Z_][a-zA-Z0-9_]*)\Z")


def component_type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


def signal_of(pipeline_id: str) -> str:
    return component_type(pipeline_id)


@dataclass
class Scan:
    """What one walk over a config finds: keys that are not strings, expansions other than
    the allowed ``${env:NAME}`` ones, and the paths whose value expands the ingest token."""

    keys: list[Violation] = field(default_factory=list)
    expansions: list[Violation] = field(default_factory=list)
    token_sites: list[list[Any]] = field(default_factory=list)


# (path, value) -> further names the value may expand there (a credential's own reference).
References = Callable[[list[Any], str], frozenset[str]]


def _none(path: list[Any], value: str) -> frozenset[str]:
    return frozenset()


def scan_config(
    config: Mapping[str, Any],
    allowed_env: frozenset[str],
    token_env: str,
    references: References = _none,
) -> Scan:
    """Keys that are not strings, expansions other than ``${env:NAME}`` for a name in
    ``allowed_env`` (or one ``references`` allows at that place: a credential written as its
    rule asks), and where ``${env:<token_env>}`` is expanded, in one walk.

    YAML reads ``true``, ``null`` or ``8080`` as a boolean, None or a number, and a JSON Schema only
    speaks of string keys, so such keys are reported here instead of reaching it. The collector
    expands values only, so keys are not scanned for expansions (component ids with ``$`` are
    refused by the id rule)."""
    scan = Scan()
    _walk(config, [], scan, allowed_env, token_env, references)
    return scan


def _walk(
    node: Any,
    path: list[Any],
    scan: Scan,
    allowed_env: frozenset[str],
    token_env: str,
    references: References,
) -> None:
    """Builds a path only for a container or a problem (a whole config is walked on every
    render, so exact types are tested before the slower abstract ``Mapping``)."""
    mapping = type(node) is dict or (type(node) is not list and isinstance(node, Mapping))
    if mapping:
        items: Any = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return
    for key, value in items:
        if mapping and not isinstance(key, str):
            scan.keys.append(non_string_key(path, key))
        if isinstance(value, str):
            if "$" in value:
                here = [*path, key]
                allowed = allowed_env | references(here, value)
                if token_env in _expansions(value, here, allowed, scan):
                    scan.token_sites.append(here)
        elif type(value) in (dict, list) or isinstance(value, (Mapping, list)):
            _walk(value, [*path, key], scan, allowed_env, token_env, references)


def _expansions(text: str, path: list[Any], allowed_env: frozenset[str], scan: Scan) -> set[str]:
    """The variable names ``text`` expands; anything but ``${env:NAME}`` with an allowed name
    is reported. ``$$`` is the collector's escape for ``$`` and is read pairwise from the
    left, as the collector counts the ``$`` before a ``${``."""
    names = set()
    for match in _EXPANSION.finditer(text):
        if match[0] == "$$":
            continue
        inner = match[1]
        if not match[0].endswith("}"):
            scan.expansions.append(
                Violation(dotted(path), "has an unterminated '${'; write '$$' for a literal '$'")
            )
            continue
        found = _ENV_EXPANSION.match(inner)
        if found and found[1] in allowed_env:
            names.add(found[1])
            continue
        names.add(inner)
        allowed = ", ".join(f"${{env:{name}}}" for name in sorted(allowed_env))
        scan.expansions.append(
            Violation(
                dotted(path),
                f"has an expansion other than {allowed or 'none'}; the collector would resolve "
                "it from its environment or a file at start-up, and the value could reach the "
                "files; remove it (write '$$' for a literal '$', e.g. '$${1}' in a regular expression)",
            )
        )
    return names


def section_of(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A top-level section (``receivers``, ``service``, ...) as a mapping; a section of another
    shape is the schema's to report, and the readers of a config find nothing in it."""
    section = config.get(name)
    return section if isinstance(section, Mapping) else {}


def pipelines_of(config: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    """``service.pipelines`` by id, each a mapping; whatever else is written there is the
    schema's to report, and the graph rules, the tenant rules and the graph view skip it."""
    service = config.get("service")
    pipelines = service.get("pipelines") if isinstance(service, Mapping) else None
    if not isinstance(pipelines, Mapping):
        return {}
    return {pid: body for pid, body in pipelines.items() if isinstance(body, Mapping)}


def pipeline_refs(pipeline: Mapping[str, Any], role: str) -> list[str]:
    """The component ids a pipeline lists under ``role``; anything else is the schema's."""
    refs = pipeline.get(role)
    return [r for r in refs if isinstance(r, str)] if isinstance(refs, list) else []


def _reference_violations(
    config: Mapping[str, Any], signals: Mapping[str, frozenset[str]]
) -> Iterator[Violation]:
    defined = {section: set((config.get(section) or {}).keys()) for section in SECTIONS}
    service = config.get("service") or {}
    for ext in service.get("extensions") or []:
        if ext not in defined["extensions"]:
            yield Violation(
                dotted(["service", "extensions", str(ext)]),
                f"extension {ext!r} is not defined; add it under extensions or remove it here",
            )
    for pipeline_id, pipeline in pipelines_of(config).items():
        signal = signal_of(pipeline_id)
        for role, sections in _ROLE_SECTIONS.items():
            seen: set[str] = set()
            for ref in pipeline.get(role) or []:
                path = ["service", "pipelines", pipeline_id, role, str(ref)]  # dotted on a problem
                if ref in seen and role == "processors":
                    # service/pipelines/config.go, PipelineConfig.Validate: only processors;
                    # a receiver or exporter listed twice is one node of the graph.
                    yield Violation(
                        dotted(path), f"{ref!r} is listed twice in this pipeline; list it once"
                    )
                seen.add(ref)
                section = next((s for s in sections if ref in defined[s]), None)
                if section is None:
                    yield Violation(
                        dotted(path),
                        f"{ref!r} is not defined under {' or '.join(sections)}; define it or remove it here",
                    )
                elif section != "connectors":
                    handled = signals.get(component_type(ref), ALL_SIGNALS)
                    if signal not in handled:
                        yield Violation(
                            dotted(path),
                            f"{ref!r} does not handle {signal}; use it only in {', '.join(sorted(handled))} pipelines",
                        )


def _connector_violations(
    config: Mapping[str, Any], names: Mapping[str, str]
) -> Iterator[Violation]:
    pairs_by_type = {"forward": _FORWARD_PAIRS, names["span_metrics"]: _SPAN_METRICS_PAIRS}
    connectors = set((config.get("connectors") or {}).keys())
    as_exporter: dict[str, set[str]] = {c: set() for c in connectors}
    as_receiver: dict[str, set[str]] = {c: set() for c in connectors}
    for pipeline_id, pipeline in pipelines_of(config).items():
        for ref in pipeline.get("exporters") or []:
            if ref in connectors:
                as_exporter[ref].add(signal_of(pipeline_id))
        for ref in pipeline.get("receivers") or []:
            if ref in connectors:
                as_receiver[ref].add(signal_of(pipeline_id))
    for connector in sorted(connectors):
        pairs = pairs_by_type.get(component_type(connector), frozenset())
        where = dotted(["connectors", connector])
        used_out, used_in = as_exporter[connector], as_receiver[connector]
        if not used_out and not used_in:
            continue  # unused components are ignored by the collector too
        for signal in sorted(used_out):
            if not any((signal, target) in pairs for target in used_in):
                yield Violation(
                    where,
                    f"is an exporter of a {signal} pipeline but no pipeline receives what it makes of {signal}; add it as a receiver of a pipeline it can feed ({_targets(pairs, signal)})",
                )
        for signal in sorted(used_in):
            if not any((source, signal) in pairs for source in used_out):
                yield Violation(
                    where,
                    f"is a receiver of a {signal} pipeline but no pipeline exports to it data it turns into {signal}; add it as an exporter of a pipeline it can read ({_sources(pairs, signal)})",
                )


def _targets(pairs: frozenset[tuple[str, str]], source: str) -> str:
    found = sorted(t for s, t in pairs if s == source)
    return "signals: " + ", ".join(found) if found else "none: it does not accept that signal"


def _sources(pairs: frozenset[tuple[str, str]], target: str) -> str:
    found = sorted(s for s, t in pairs if t == target)
    return "signals: " + ", ".join(found) if found else "none: it does not produce that signal"


def connector_readers(config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Connector id -> the pipelines that receive from it: the edges that leave a connector,
    found once (the cycle rule and the tenant paths follow them)."""
    readers: dict[str, list[str]] = {c: [] for c in (config.get("connectors") or {})}
    for pipeline_id, pipeline in pipelines_of(config).items():
        for ref in pipeline.get("receivers") or []:
            if ref in readers:
                readers[ref].append(pipeline_id)
    return readers


_LOOP_SHOWN = 8  # pipelines of a cycle named in its message; a longer one is shortened


def _cycle_violations(config: Mapping[str, Any]) -> Iterator[Violation]:
    """A connector loop would pass the same data around forever; the collector refuses it.

    Found by a depth-first walk kept on an explicit stack (a chain of thousands of connectors is
    no reason for a RecursionError), over edges found through each connector's receiving
    pipelines (linear in the references, whatever the number of pipelines)."""
    pipelines = pipelines_of(config)
    receiving = connector_readers(config)
    feeds: dict[str, list[str]] = {}
    for pipeline_id, pipeline in pipelines.items():
        targets: set[str] = set()
        for ref in pipeline.get("exporters") or []:
            targets.update(receiving.get(ref, ()))
        feeds[pipeline_id] = sorted(targets)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(pipelines):
        if start in state:
            continue
        path = [start]
        todo = [iter(feeds[start])]
        state[start] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(nxt) == 1:
                loop = [*path[path.index(nxt) :], nxt]
                if len(loop) > _LOOP_SHOWN:  # one line, however long the loop
                    loop = [*loop[:3], f"({len(loop) - 5} more)", *loop[-2:]]
                yield Violation(
                    "service.pipelines",
                    f"pipelines form a cycle through connectors ({' -> '.join(loop)}); "
                    "break the loop",
                )
                return
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(feeds[nxt]))


def _name_is_valid(name: str) -> bool:
    """The collector's rule for the part of an id after ``/``: 1 to 1024 bytes, no white
    space, control character or symbol (``$``, ``{``, ``+``, ``|``, ...)."""
    if _PLAIN_NAME.fullmatch(name):  # the common case, without a look at each character
        return True
    return 0 < len(name.encode("utf-8", "surrogatepass")) <= 1024 and not any(
        unicodedata.category(char)[0] in "ZCS" for char in name
    )


def _id_violations(config: Mapping[str, Any]) -> Iterator[Violation]:
    """Component and pipeline ids whose name the collector refuses, e.g. ``resource/${file:x}``."""
    places = [[section] for section in SECTIONS] + [["service", "pipelines"]]
    for place in places:
        node: Any = config
        for part in place:
            node = node.get(part) if isinstance(node, Mapping) else None
        for key in node if isinstance(node, Mapping) else ():
            _, slash, name = str(key).partition("/")
            if slash and not _name_is_valid(name):
                yield Violation(
                    dotted([*place, key]),
                    "has a name (after '/') the collector refuses: white space, a control "
                    "character or a symbol such as '$', '{' or '+'; use letters, digits, '_', "
                    "'-', '.' or '/'",
                )


def graph_violations(
    config: Mapping[str, Any], names: Mapping[str, str], signals: Mapping[str, frozenset[str]]
) -> list[Violation]:
    """What the collector refuses when it builds the pipeline graph; ``names`` are the line's
    component type names (role to type), ``signals`` the signals each type handles where the
    line's schema says (others are taken to handle every signal)."""
    return [
        *_id_violations(config),
        *_reference_violations(config, signals),
        *_connector_violations(config, names),
        *_cycle_violations(config),
    ]


def unused_components(config: Mapping[str, Any]) -> list[Violation]:
    """Components defined but used by no pipeline (extensions: not in ``service.extensions``).

    The collector ignores them without a word, so a filter meant to drop data, or an exporter
    meant to receive it, silently does nothing: a warning, since the config still works."""
    used: set[str] = set()
    for pipeline in pipelines_of(config).values():
        for role in _ROLE_SECTIONS:
            used.update(r for r in pipeline.get(role) or [] if isinstance(r, str))
    service = config.get("service") or {}
    started = {e for e in service.get("extensions") or [] if isinstance(e, str)}
    unused = {
        "extensions": "is defined but not listed in service.extensions, so the collector never "
        "starts it; list it there or remove it",
    }
    warnings = []
    for section in SECTIONS:
        in_use = started if section == "extensions" else used
        message = unused.get(
            section,
            "is defined but no pipeline uses it, so the collector ignores it (whatever it should "
            "filter, add or receive, it does not); add it to a pipeline or remove it",
        )
        for component_id in config.get(section) or {}:
            if component_id not in in_use:
                warnings.append(Violation(dotted([section, component_id]), message))
    return warnings
