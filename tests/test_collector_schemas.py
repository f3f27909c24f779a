"""The generated collector schemas are what their generator makes of today's inputs.

``tools/generate-collector-schemas --check`` rebuilds every line's schema from the platform
manifests, upstream's ``config.schema.yaml`` files in the Go module cache and the overlays in
``collector/schema/``, and fails on any difference from the committed file. The module cache is
filled by ``tools/build-otelcol``; outside CI the test skips without it, in CI it fails.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from support import helpers

GENERATOR = helpers.REPO / "tools" / "generate-collector-schemas"
# The exit code of tools/generate-collector-schemas when the module cache lacks its inputs.
MISSING_INPUTS = 3


def _unavailable(message: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def test_regenerating_the_schemas_changes_nothing() -> None:
    if shutil.which("go") is None:
        _unavailable("the go command is not on PATH: the generator reads the Go module cache")
    result = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, check=False
    )
    if result.returncode == MISSING_INPUTS:
        _unavailable(
            f"{result.stderr.strip()}\nRun tools/build-otelcol current-platform and "
            "legacy-platform to fill the module cache."
        )
    assert result.returncode == 0, result.stderr


def test_the_generator_refuses_an_overlay_key_given_twice(tmp_path: Path) -> None:
    """A key given twice in an overlay would silently keep only the last one."""
    loader = importlib.machinery.SourceFileLoader("generate_collector_schemas", str(GENERATOR))
    generator = types.ModuleType(loader.name)
    generator.__file__ = str(GENERATOR)
    loader.exec_module(generator)
    generator.OVERLAYS = tmp_path
    (tmp_path / "twice.yaml").write_text("defs:\n  a: {}\n  a: {}\n", encoding="utf-8")
    with pytest.raises(generator.GenerationError, match="'a' is given twice"):
        generator.load_overlay("twice")


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
