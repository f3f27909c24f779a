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


def test_the_generator_names_options_the_go_struct_declares_and_the_schema_lacks(
    tmp_path: Path,
) -> None:
    """Upstream's schema files leave out options the collector reads (v0.161.0's deprecated
    keep-alive options of the HTTP client): a schema without them refuses working configs."""
    generator = _generator_module()
    package = "go.opentelemetry.io/collector/config/confighttp"
    folder = tmp_path / f"{package}@v9.9.9"
    folder.mkdir(parents=True)
    (folder / "client.go").write_text(
        "package confighttp\n\ntype ClientConfig struct {\n"
        '\tEndpoint string `mapstructure:"endpoint,omitempty"`\n'
        "\t// Deprecated: use Keepalive.MaxIdleConns instead.\n"
        '\tMaxIdleConns int `mapstructure:"max_idle_conns,omitempty"`\n'
        '\tTLS configtls.ClientConfig `mapstructure:",squash"`\n}\n\n'
        'type HTTPServerSettings struct {\n\tCORS *CORSConfig `mapstructure:"cors"`\n}\n',
        encoding="utf-8",
    )
    manifest = types.SimpleNamespace(
        versions={
            root: ({"v9.9.9"} if root == package.split("/config")[0] else set())
            for root in generator.ROOTS
        }
    )
    files = generator.ModuleFiles(tmp_path, manifest)
    client, server = (
        "core.config.confighttp.client_config",
        "core.config.confighttp.http_server_settings",
    )
    bundle = types.SimpleNamespace(
        packages={client: package, server: package},
        structs={client: "client_config", server: "http_server_settings"},
    )
    defs = {client: {"properties": {"endpoint": {}}}, server: {"properties": {}}}
    assert generator.undeclared_options(defs, bundle, files) == [
        f"{client}.max_idle_conns",
        f"{server}.cors",
    ]
    defs[client] = {"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"endpoint": {}}}]}
    defs["base"] = {"properties": {"max_idle_conns": {}}}
    defs[server]["properties"]["cors"] = {}
    assert generator.undeclared_options(defs, bundle, files) == []


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
