"""The generated collector schemas are what their generator makes of today's inputs.

``tools/generate-collector-schemas --check`` rebuilds every line's schema from the platform
manifests, upstream's ``config.schema.yaml`` files in the Go module cache and the overlays in
``collector/schema/``, and fails on any difference from the committed file. The module cache is
filled by ``tools/build-otelcol``; outside CI the test skips without it, in CI it fails.
``tools/generate-ottl-facts --check`` does the same for the OTTL function and path names.
"""

from __future__ import annotations

import importlib.machinery
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from support import helpers

GENERATOR = helpers.REPO / "tools" / "generate-collector-schemas"
# The OTTL facts (function and path names) beside the schemas, generated the same way.
GENERATORS = [GENERATOR, helpers.REPO / "tools" / "generate-ottl-facts"]
# The exit code of both generators when the module cache lacks their inputs.
MISSING_INPUTS = 3


@pytest.mark.parametrize("generator", GENERATORS, ids=lambda p: p.name)
def test_regenerating_the_schemas_changes_nothing(generator: Path) -> None:
    if shutil.which("go") is None:
        helpers.unavailable(
            "the go command is not on PATH: the generator reads the Go module cache"
        )
    result = subprocess.run(
        [sys.executable, str(generator), "--check"], capture_output=True, text=True, check=False
    )
    if result.returncode == MISSING_INPUTS:
        helpers.unavailable(
            f"{result.stderr.strip()}\nRun tools/build-otelcol current-platform and "
            "legacy-platform to fill the module cache."
        )
    assert result.returncode == 0, result.stderr


def _generator_module() -> types.ModuleType:
    loader = importlib.machinery.SourceFileLoader("generate_collector_schemas", str(GENERATOR))
    generator = types.ModuleType(loader.name)
    generator.__file__ = str(GENERATOR)
    loader.exec_module(generator)
    return generator


def test_the_generator_refuses_an_overlay_key_given_twice(tmp_path: Path) -> None:
    """A key given twice in an overlay would silently keep only the last one."""
    generator = _generator_module()
    generator.OVERLAYS = tmp_path
    (tmp_path / "twice.yaml").write_text("defs:\n  a: {}\n  a: {}\n", encoding="utf-8")
    with pytest.raises(generator.GenerationError, match="'a' is given twice"):
        generator.load_overlay("twice")


@pytest.mark.parametrize("line", _generator_module().lines())
def test_the_shipped_schema_takes_every_option_the_lines_collectors_read(line: str) -> None:
    """Every option a component of the line's platform manifest reads, found by reflection on
    its compiled config (tools/configkeys: squashed structs of other packages, the ``enabled``
    of a ``configoptional.Optional``...), is one the shipped schema takes where it is read, or
    is listed under ``unread`` in an overlay with its reason. The check of definitions against
    same-named Go structs that came before missed 33 on ``current`` (the HTTP server's
    ``dialer``, squashed from confignet, and ``enabled`` of every optional section) and 29 on
    ``legacy`` (``enabled``)."""
    if shutil.which("go") is None:
        helpers.unavailable("the go command is not on PATH: the options are read from Go")
    generator = _generator_module()
    overlay = generator.load_overlay(line)
    try:
        read = generator.read_options(generator.Manifest(overlay["manifest"]))
    except generator.InputsMissing as exc:
        helpers.unavailable(str(exc))
    schema = json.loads(
        (helpers.REPO / "schemas" / f"collector-{line}.schema.json").read_text(encoding="utf-8")
    )
    excluded = {
        **(generator.load_overlay("common").get("unread") or {}),
        **(overlay.get("unread") or {}),
    }
    assert read, "tools/configkeys found no component"
    assert [key for key in generator.unread_options(schema, read) if key not in excluded] == []


def test_the_generator_names_options_a_component_reads_and_the_schema_refuses() -> None:
    """Options reached through a squashed struct, an optional section's ``enabled``, the items
    of a list and the values of a mapping are judged where the collector reads them."""
    generator = _generator_module()
    leaf = {"kind": "leaf", "type": "string"}
    server = {
        "kind": "struct",
        "fields": {
            "endpoint": leaf,
            "dialer": {"kind": "struct", "fields": {"timeout": leaf}},
            "tls": {"kind": "optional", "enabled": True, "value": {"kind": "struct"}},
            "headers": {"kind": "map", "value": {"kind": "struct", "fields": {"x": leaf}}},
            "rules": {"kind": "list", "value": {"kind": "struct", "fields": {"y": leaf}}},
        },
    }
    read = [{"section": "receivers", "type": "r", "config": server}]
    closed = {"type": "object", "unevaluatedProperties": False}
    schema = {
        "$defs": {
            "base": {"properties": {"endpoint": {"type": "string"}}},
            "r": {
                "allOf": [{"$ref": "#/$defs/base"}],
                "properties": {
                    "tls": {**closed, "properties": {}},
                    "headers": {"type": "object", "additionalProperties": closed},
                    "rules": {"type": "array", "items": {**closed, "properties": {"y": {}}}},
                },
            },
        },
        "properties": {
            "receivers": {
                "patternProperties": {f"^r{generator.ID_PATTERN}": {"$ref": "#/$defs/r", **closed}}
            }
        },
    }
    assert generator.unread_options(schema, read) == [
        "receivers.r.dialer",
        "receivers.r.headers.*.x",
        "receivers.r.tls.enabled",
    ]
    schema["$defs"]["base"]["properties"]["dialer"] = {"type": "object"}  # unchecked below
    schema["$defs"]["r"]["properties"]["tls"]["properties"]["enabled"] = {"type": "boolean"}
    schema["$defs"]["r"]["properties"]["headers"]["additionalProperties"]["properties"] = {"x": {}}
    assert generator.unread_options(schema, read) == []


def test_the_generator_names_a_condition_on_an_option_its_definition_lacks() -> None:
    """A passing ``if`` makes the keys it tests known to ``unevaluatedProperties``: the v0.141.0
    HTTP server took ``transport`` that way, which its collector refuses."""
    generator = _generator_module()
    condition = {"required": ["transport"], "properties": {"transport": {"enum": ["unix"]}}}
    defs = {
        "server": {"properties": {"endpoint": {}}, "if": condition},
        "debug": {"properties": {"verbosity": {}}, "allOf": [{"if": condition}]},
        "grpc": {"properties": {"endpoint": {}, "transport": {}}, "if": condition},
        "client": {"properties": {"a": {}}, "anyOf": [{"then": {"properties": {"b": {}}}}]},
        "refused": {"properties": {"a": {}}, "not": {"properties": {"b": {}}}},
    }
    assert generator.unknown_condition_keys(defs) == [
        "client.b",
        "debug.transport",
        "server.transport",
    ]


@pytest.mark.parametrize("line", list(helpers.line_versions()))
def test_each_name_in_line_yaml_is_a_type_the_lines_schema_knows(line: str) -> None:
    """line.yaml's names (what the templates write) and the schema's types (what the line's
    platform manifest builds, read from upstream's metadata.yaml) must agree."""
    meta = helpers.line_metadata()[line]
    schema = json.loads((helpers.REPO / "schemas" / meta["schema"]).read_text(encoding="utf-8"))
    known = {
        pattern[1:].split("(", 1)[0]
        for section in schema["properties"].values()
        for pattern, target in section.get("patternProperties", {}).items()
        if "$ref" in target
    }
    assert set(meta["names"].values()) <= known


@pytest.mark.parametrize("version", ["0.161.0", "0.141.0"])
def test_the_telemetry_traces_sampler_is_accepted(version: str) -> None:
    """The SDK's sampler under service.telemetry.traces (otelconf TracerProvider.Sampler), as
    both releases accept it (a New Relic example of the real-world corpus has it); a misspelt
    key beside it is still refused."""
    from nemo_gym.orchestration.executors.otel import (
        CollectorConfigError,
        validate_collector_config,
    )

    sampler = "parent_based: {root: {trace_id_ratio_based: {ratio: 0.01}}}"
    config = helpers.one_processor_config("batch", "", "traces").replace(
        "  telemetry: {metrics: {level: none}}",
        "  telemetry:\n    metrics: {level: none}\n    traces:\n      sampler: {" + sampler + "}",
    )
    validate_collector_config(config, collector_version=version)
    with pytest.raises(CollectorConfigError, match=r"service\.telemetry\.traces"):
        validate_collector_config(config.replace("sampler:", "samplr:"), collector_version=version)
