"""A corpus of collector configs for judging the package's checks against the real collector.

Every rendered variant (each fixture config x line x combination) plus systematic mutations of
the bundled example's default rendering, per line: an unknown option in every component, wrong
types, bad durations, missing required keys, undefined components in every pipeline, connectors
used wrongly, the other line's component names, empty component bodies, extra pipelines and
unknown top-level keys. Each case is a whole YAML document and the line whose release judges it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from nemo_gym.orchestration.api import SubmitConfig

from . import helpers

Doc = dict[str, Any]
SECTIONS = ("receivers", "processors", "exporters", "connectors", "extensions")
# Component type names per line, from each line's line.yaml.
NAMES = {line: meta["names"] for line, meta in helpers.line_metadata().items()}

# Where the package is stricter than the collector on purpose: case id -> why. Every other case
# must be judged alike by both.
_EXPANSION = (
    "only ${env:NAME} may expand: the renderer writes nothing else, so any other expansion in a "
    "config means a value was pasted unescaped or a missing variable is hidden behind a default"
)
_IGNORED_HTTP_OPTION = (
    "the collector's HTTP client and server settings ignore unknown keys (confighttp unmarshals "
    "them with WithIgnoreUnused), so a misspelt option such as retry_on_falure would be dropped "
    "without a word; the package names it"
)
_NUMERIC_LOG_LEVEL = (
    "a number is zap's internal level (3 is dpanic, not a verbosity); the package asks for the name"
)
STRICTER_ON_PURPOSE = {
    **{f"{line}/expansion/bare-variable": _EXPANSION for line in NAMES},
    **{f"{line}/expansion/env-default": _EXPANSION for line in NAMES},
    "current/unknown-option/otlp_http/backend": _IGNORED_HTTP_OPTION,
    "current/unknown-option/otlp_http/queue": _IGNORED_HTTP_OPTION,
    "current/unknown-option/otlp-receiver-http": _IGNORED_HTTP_OPTION,
    **{f"{line}/type/log-level-number": _NUMERIC_LOG_LEVEL for line in NAMES},
}


_LISTEN_ADDRESS = (
    "a listening address must be host:port; the collector finds a bad one only when the "
    "listener starts, which validate does not do"
)
_TOKEN_SITES = (
    "the token's expansion may appear only in the OTLP/HTTP exporter's Authorization header and "
    "as the tenant attribute's value (the tenant rules): anywhere else it can reach a file, a log "
    "or another host"
)
STRICTER_ON_PURPOSE.update(
    {
        "current/platform/zpages/unknown-option": _IGNORED_HTTP_OPTION,
        **{f"{line}/platform/zpages/value": _LISTEN_ADDRESS for line in NAMES},
        **{f"{line}/platform/pprof/value": _LISTEN_ADDRESS for line in NAMES},
        **{f"{line}/platform/bearertokenauth/valid": _TOKEN_SITES for line in NAMES},
    }
)
_CLEARTEXT = (
    "the fixtures' gateway is plain http:// on the cluster's private network, opted in with "
    "otel.allow_plain_http; without validate's --allow-plain-http the package refuses the token "
    "in cleartext (issue 17), which the collector sends without a word"
)
STRICTER_ON_PURPOSE.update(
    {
        f"{line}/rendered/{config}/{combination}": _CLEARTEXT
        for line in NAMES
        for config in ("minimal", "long-job")
        for combination in ("otlp_http+file", "otlp_http")
    }
)

# What no schema can judge: the collector refuses these and the package's schema and graph
# checks pass them. ``check --collector BINARY`` runs the binary's own validate to catch them.
# (OTTL syntax and function names left this list: the package reads OTTL, _checks/ottl.py.)
_FILES = "files and directories on the node exist or not only where the collector runs"
NOT_JUDGED_BY_SCHEMA = {
    **{f"{line}/platform/file_storage/missing-directory": _FILES for line in NAMES},
    **{f"{line}/platform/file_storage/empty": _FILES for line in NAMES},
}


@dataclass(frozen=True)
class Case:
    """A whole collector YAML document, the line whose schema judges it, and the collector
    (a manifest's name under collector/) whose validate judges it: the line's own by default."""

    id: str
    line: str
    text: str
    collector: str = ""

    @property
    def binary(self) -> str:
        return self.collector or self.line


def dump(doc: Doc) -> str:
    """libyaml's emitter: a tenth of the pure-Python one's time, for hundreds of mutations."""
    return yaml.dump(doc, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True, width=1000)


def rendered_cases() -> Iterator[Case]:
    for name, path in helpers.fixture_configs().items():
        config = SubmitConfig.from_yaml(path)
        for line, combination, text in helpers.render_variants(config):
            yield Case(f"{line}/rendered/{name}/{combination}", line, text)


def base_document(line: str) -> Doc:
    example = SubmitConfig.from_yaml(helpers.fixture_configs()["example"])
    for rendered_line, combination, text in helpers.render_variants(example):
        if rendered_line == line and combination == "otlp_http+file":
            return yaml.load(text, Loader=yaml.CSafeLoader)
    raise LookupError(line)


def _components(doc: Doc) -> Iterator[tuple[str, str]]:
    for section in SECTIONS:
        for component in doc.get(section) or {}:
            yield section, component


def _pipelines_using(doc: Doc, component: str) -> Iterator[tuple[str, str]]:
    for pipeline_id, pipeline in doc["service"]["pipelines"].items():
        for role in ("receivers", "processors", "exporters"):
            if component in pipeline.get(role, []):
                yield pipeline_id, role


def _rename(doc: Doc, old: str, new: str) -> None:
    """Rename a component everywhere (its definition and every pipeline reference)."""
    for section, component in list(_components(doc)):
        if component == old or component.startswith(f"{old}/"):
            target = new + component[len(old) :]
            doc[section] = {(target if k == component else k): v for k, v in doc[section].items()}
            for pipeline_id, role in list(_pipelines_using(doc, component)):
                refs = doc["service"]["pipelines"][pipeline_id][role]
                refs[refs.index(component)] = target


def _set(path: str, value: Any) -> Callable[[Doc], None]:
    """A mutation setting ``value`` at a dotted path (``[n]`` indexes a list)."""

    def mutate(doc: Doc) -> None:
        node: Any = doc
        keys = _split(path)
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return mutate


def _delete(path: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node: Any = doc
        keys = _split(path)
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return mutate


def _split(path: str) -> list[Any]:
    keys: list[Any] = []
    for part in path.split("|"):
        keys.extend(int(p[1:-1]) if p.startswith("[") else p for p in _brackets(part))
    return keys


def _brackets(part: str) -> Iterator[str]:
    head, *indexes = part.split("[")
    if head:
        yield head
    for index in indexes:
        yield f"[{index}"


def _targeted(line: str) -> dict[str, Callable[[Doc], None]]:
    """Hand-picked mutations of one option each; paths use ``|`` between keys (ids hold dots)."""
    exporter = f"exporters|{NAMES[line]['otlp_http']}/backend"
    span_metrics = f"connectors|{NAMES[line]['span_metrics']}"
    scrape = "receivers|prometheus|config|scrape_configs[0]"
    return {
        # wrong types
        "type/batch-size-string": _set("processors|batch", {"send_batch_size": "lots"}),
        "type/queue-size-string": _set(f"{exporter}|sending_queue|queue_size", "big"),
        "type/retry-enabled-list": _set(f"{exporter}|retry_on_failure|enabled", ["yes"]),
        "type/headers-list": _set(f"{exporter}|headers", ["Authorization"]),
        "type/file-path-mapping": _set("exporters|file/traces|path", {"p": "x"}),
        "type/buckets-words": _set(f"{span_metrics}|histogram|explicit|buckets", ["fast"]),
        "type/dimensions-strings": _set(f"{span_metrics}|dimensions", ["service.name"]),
        "type/attributes-mapping": _set("processors|resource/job|attributes", {"key": "a"}),
        "type/statements-string": _set(
            "processors|transform/metric_names|metric_statements", "set(name, 1)"
        ),
        "type/sd-files-string": _set(f"{scrape}|file_sd_configs[0]|files", "targets.json"),
        "type/grpc-endpoint-list": _set(
            "receivers|otlp|protocols|grpc|endpoint", ["localhost:4317"]
        ),
        "type/log-level-number": _set("service|telemetry|logs|level", 3),
        "unknown-option/otlp-receiver-http": _set(
            "receivers|otlp|protocols|http|no_such_option", 1
        ),
        # An optional section's enabled (configoptional reads it): false leaves it unset and
        # unvalidated, though a key it does not know is still refused.
        "optional/grpc-disabled": _set("receivers|otlp|protocols|grpc|enabled", False),
        "optional/tls-disabled": _set("receivers|otlp|protocols|grpc|tls", {"enabled": False}),
        "optional/tls-disabled-unknown-option": _set(
            "receivers|otlp|protocols|grpc|tls", {"enabled": False, "no_such_option": 1}
        ),
        "optional/tls-enabled-without-certificate": _set(
            "receivers|otlp|protocols|grpc|tls", {"enabled": True}
        ),
        # bad values
        "value/file-format-xml": _set("exporters|file/logs|format", "xml"),
        "value/resource-action-smash": _set(
            "processors|resource/job|attributes[0]|action", "smash"
        ),
        "value/error-mode-loud": _set("processors|transform/keep_service_name|error_mode", "loud"),
        "value/log-level-chatty": _set("service|telemetry|logs|level", "chatty"),
        # On the exporter whose queue is on (the disk queue's): a disabled queue's size is
        # checked by nobody.
        "value/queue-size-negative": _set(
            f"exporters|{NAMES[line]['otlp_http']}/queue|sending_queue|queue_size", -5
        ),
        "value/convert-to-colour": _set(
            "processors|resource/job|attributes[-1]|converted_type", "colour"
        ),
        # bad durations
        "duration/batch-timeout": _set("processors|batch", {"timeout": "5 parsecs"}),
        "duration/retry-initial": _set(f"{exporter}|retry_on_failure|initial_interval", "soon"),
        "duration/retry-max-elapsed": _set(f"{exporter}|retry_on_failure|max_elapsed_time", "5"),
        "duration/flush-interval": _set(f"{span_metrics}|metrics_flush_interval", "15"),
        "duration/scrape-interval": _set(f"{scrape}|scrape_interval", "fortnightly"),
        "duration/scrape-timeout": _set(f"{scrape}|scrape_timeout", "10 s"),
        # missing required keys
        "missing/file-path": _delete("exporters|file/metrics|path"),
        "missing/otlp-http-endpoint": _delete(f"{exporter}|endpoint"),
        "missing/attribute-action": _delete("processors|resource/job|attributes[0]|action"),
        "missing/attribute-key": _delete("processors|resource/job|attributes[1]|key"),
        "missing/prometheus-config": _set("receivers|prometheus", {}),
        "missing/job-name": _delete(f"{scrape}|job_name"),
        "missing/pipeline-receivers": _delete("service|pipelines|logs/files|receivers"),
        "missing/pipeline-exporters": _delete("service|pipelines|logs/ingest|exporters"),
        "missing/service": _delete("service"),
        "missing/pipelines": _delete("service|pipelines"),
        "missing/otlp-protocols": _set("receivers|otlp", {"protocols": {}}),
        "value/statements-empty": _set(
            "processors|transform/metric_names|metric_statements[0]|statements", []
        ),
        "missing/statement-statements": _delete(
            "processors|transform/metric_names|metric_statements[0]|statements"
        ),
        # empty bodies the collector fills with defaults
        "empty/batch": _set("processors|batch", None),
        "empty/forward": _set("connectors|forward/logs", None),
        "empty/health-check": _set("extensions|health_check", None),
        "empty/span-metrics": _set(span_metrics, None),
        "empty/file": _set("exporters|file/traces", None),
        "empty/otlp-receiver": _set("receivers|otlp", None),
        "empty/sending-queue": _set(f"{exporter}|sending_queue", None),
        # unknown top-level keys
        "top-level/foo": _set("foo", {"bar": 1}),
        "top-level/extension-typo": _set("extension", {"health_check": None}),
        "top-level/pipelines": _set("pipelines", {}),
        "top-level/service-typo": _set("service|pipeline", {}),
        # expansions: only ${env:NAME} is written by the renderer
        "expansion/bare-variable": _set("processors|resource/job|attributes[1]|value", "${USER}"),
        "expansion/env-default": _set(
            "processors|resource/job|attributes[1]|value", "${env:USER:-nobody}"
        ),
        "expansion/escaped": _set("processors|resource/job|attributes[1]|value", "$${USER}"),
    }


def _graph(line: str) -> dict[str, Callable[[Doc], None]]:
    span_metrics = NAMES[line]["span_metrics"]
    pipelines = "service|pipelines"

    def only_exporter(doc: Doc) -> None:  # forward/traces feeds nothing
        for pipeline_id in ("traces/backend", "traces/files"):
            del doc["service"]["pipelines"][pipeline_id]

    def wrong_signal(doc: Doc) -> None:  # forward/logs exported by logs, received by metrics
        doc["service"]["pipelines"]["metrics/files"]["receivers"] = ["forward/logs"]
        doc["service"]["pipelines"]["logs/files"]["receivers"] = ["otlp"]

    def span_metrics_as_traces_receiver(doc: Doc) -> None:
        doc["service"]["pipelines"]["traces/files"]["receivers"].append(span_metrics)

    def span_metrics_unfed(doc: Doc) -> None:
        doc["service"]["pipelines"]["traces/ingest"]["exporters"].remove(span_metrics)

    def cycle(doc: Doc) -> None:  # metrics/queue feeds metrics/ingest again
        doc["connectors"]["forward/loop"] = None
        doc["service"]["pipelines"]["metrics/queue"]["exporters"].append("forward/loop")
        doc["service"]["pipelines"]["metrics/ingest"]["receivers"].append("forward/loop")

    return {
        "connector/only-exporter": only_exporter,
        "connector/wrong-signal": wrong_signal,
        "connector/span-metrics-receives-traces": span_metrics_as_traces_receiver,
        "connector/span-metrics-unfed": span_metrics_unfed,
        "connector/cycle": cycle,
        "extension/undefined": _set("service|extensions", ["health_check", "pprof"]),
        "extension/not-enabled": _set("service|extensions", []),
        "pipeline/extra-traces": _set(
            f"{pipelines}|traces/extra", {"receivers": ["otlp"], "exporters": ["file/traces"]}
        ),
        "pipeline/extra-metrics-batch": _set(
            f"{pipelines}|metrics/extra",
            {"receivers": ["otlp"], "processors": ["batch"], "exporters": ["file/metrics"]},
        ),
        "pipeline/unknown-signal": _set(
            f"{pipelines}|profiles2", {"receivers": ["otlp"], "exporters": ["file/logs"]}
        ),
        "pipeline/empty-name": _set(
            f"{pipelines}|logs/", {"receivers": ["otlp"], "exporters": ["file/logs"]}
        ),
        "pipeline/prometheus-in-logs": _set(
            f"{pipelines}|logs/extra", {"receivers": ["prometheus"], "exporters": ["file/logs"]}
        ),
        "unused/exporter": _set("exporters|file/unused", {"path": "/tmp/unused.jsonl"}),
        "unused/processor": _set("processors|batch/unused", None),
        "unknown-type/receiver": _set("receivers|zipkin", None),
        "unknown-type/exporter": _set("exporters|kafka", {"brokers": ["localhost:9092"]}),
    }


def _per_component(base: Doc) -> dict[str, Callable[[Doc], None]]:
    """An unknown option in every component; an undefined reference in every pipeline role."""
    mutations: dict[str, Callable[[Doc], None]] = {}
    for section, component in _components(base):

        def unknown_option(doc: Doc, section: str = section, component: str = component) -> None:
            doc[section][component] = dict(doc[section][component] or {}, no_such_option=1)

        mutations[f"unknown-option/{component}"] = unknown_option
    undefined = {"receivers": "zipkin", "processors": "memory_limiter", "exporters": "debug"}
    for pipeline_id in base["service"]["pipelines"]:
        for role, missing in undefined.items():

            def reference(doc: Doc, pipeline_id: str = pipeline_id, role: str = role) -> None:
                doc["service"]["pipelines"][pipeline_id].setdefault(role, []).append(
                    undefined[role]
                )

            if role != "processors" or pipeline_id.endswith("/ingest"):
                mutations[f"undefined/{pipeline_id}/{role}/{missing}"] = reference
    return mutations


def _other_line(line: str) -> dict[str, Callable[[Doc], None]]:
    other = "legacy" if line == "current" else "current"

    def rename_all(doc: Doc) -> None:
        for kind, name in NAMES[line].items():
            _rename(doc, name, NAMES[other][kind])

    def rename_exporter(doc: Doc) -> None:
        _rename(doc, NAMES[line]["otlp_http"], NAMES[other]["otlp_http"])

    def rename_connector(doc: Doc) -> None:
        _rename(doc, NAMES[line]["span_metrics"], NAMES[other]["span_metrics"])

    return {
        f"other-line/{line}-on-{other}-names": rename_all,
        f"other-line/exporter-{NAMES[other]['otlp_http']}": rename_exporter,
        f"other-line/connector-{NAMES[other]['span_metrics']}": rename_connector,
    }


def mutated_cases() -> Iterator[Case]:
    for line in helpers.line_versions():
        base = base_document(line)
        mutations = {
            **_per_component(base),
            **_targeted(line),
            **_graph(line),
            **_other_line(line),
        }
        for name, mutate in mutations.items():
            doc = copy.deepcopy(base)
            mutate(doc)
            yield Case(f"{line}/{name}", line, dump(doc))


def corpus() -> list[Case]:
    from .platform_corpus import platform_cases

    return [
        *rendered_cases(),
        *mutated_cases(),
        *(case for line in helpers.line_versions() for case in platform_cases(line)),
    ]


def stricter_reason(case: Case) -> str | None:
    return STRICTER_ON_PURPOSE.get(case.id)


def blind_spot(case: Case) -> str | None:
    return NOT_JUDGED_BY_SCHEMA.get(case.id)
