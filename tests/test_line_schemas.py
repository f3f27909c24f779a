"""Each line's schema is generated from its line.yaml, and regenerating it changes nothing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from importlib.machinery import SourceFileLoader
from types import ModuleType

import helpers

GENERATOR = helpers.REPO / "tools" / "generate-line-schemas"


def _generator() -> ModuleType:
    loader = SourceFileLoader("generate_line_schemas", str(GENERATOR))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_regenerating_the_line_schemas_changes_nothing() -> None:
    result = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_the_line_schema_follows_line_yaml() -> None:
    """A line whose line.yaml renames a component gets that name, and the names of older
    lines for the same component are refused with a message naming the new one."""
    meta = {
        "collector_min": "0.200.0",
        "collector_max": None,
        "schema": "collector-future.schema.json",
        "names": {"otlp_http": "otlp_http_v2", "span_metrics": "span_metrics"},
    }
    older = list(helpers.line_metadata().values())
    exporters = _generator().line_schema("future", meta, older)["properties"]["exporters"]
    patterns = exporters["patternProperties"]
    assert "$ref" in patterns["^otlp_http_v2(/[^\\s]+)?(?![\\s\\S])"]
    for old in ("otlp_http", "otlphttp"):
        assert "use otlp_http_v2" in patterns[f"^{old}(/[^\\s]+)?(?![\\s\\S])"]["x-message"]
    assert exporters["description"] == "Exporters this line knows: otlp_http_v2, file, debug."
