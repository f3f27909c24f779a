"""The platform collectors: what they are built from, and a platform team's override on them.

Each line's schema is generated from its platform manifest (tools/generate-collector-schemas);
the binary built from that manifest must know exactly the component types the schema knows,
and an override that adds a platform component must render, pass the package's checks and pass
the binary's own ``validate``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from support import helpers
from support.otelcol import collector_binary, run_validate
from support.platform_corpus import COMPONENTS, override_with_filter, schema, type_name

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import render_collector_config

pytestmark = pytest.mark.collector

LINES = tuple(helpers.line_versions())
SECTIONS = ("receivers", "processors", "exporters", "connectors", "extensions")


def _schema_types(line: str) -> set[tuple[str, str]]:
    """(section, type) for every component the line's schema accepts (not the deprecated aliases)."""
    found = set()
    for section in SECTIONS:
        for pattern, target in schema(line)["properties"][section]["patternProperties"].items():
            if "$ref" in target and "x-deprecated" not in target:
                found.add((section, pattern[1:].split("(", 1)[0]))
    return found


@pytest.mark.parametrize("line", LINES)
def test_the_platform_binary_knows_exactly_the_schemas_components(line: str) -> None:
    binary = collector_binary(f"{line}-platform")
    listing = subprocess.run(
        [str(binary), "components"], capture_output=True, text=True, check=True
    )
    components = yaml.safe_load(listing.stdout)
    built = {(s, entry["name"]) for s in SECTIONS for entry in components.get(s) or []}
    assert built == _schema_types(line)
    assert {(COMPONENTS[d].section, type_name(line, d)) for d in COMPONENTS} <= built


@pytest.mark.parametrize("line", LINES)
def test_an_override_with_a_filter_processor_renders_and_validates(
    line: str, tmp_path: Path
) -> None:
    """The issue's case: a platform team drops debug logs with a filter processor."""
    templates = tmp_path / "templates"
    (templates / line).mkdir(parents=True)
    (templates / line / "otlp_http+file.yaml.j2").write_text(
        override_with_filter(line), encoding="utf-8"
    )
    example = SubmitConfig.from_yaml(helpers.EXAMPLE)
    config = helpers.variant(example, helpers.line_versions()[line], "otlp_http+file")
    benchmark = next(iter(config.driver.benchmarks))
    text = render_collector_config(
        config, benchmark, helpers.job_dir(config, benchmark), template_dirs=[templates]
    )
    rendered = yaml.safe_load(text)
    assert "filter/drop_debug" in rendered["processors"]
    assert rendered["service"]["pipelines"]["logs/filtered"]["processors"] == ["filter/drop_debug"]
    path = tmp_path / "collector.yaml"
    path.write_text(text, encoding="utf-8")
    result = run_validate(collector_binary(f"{line}-platform"), path)
    assert result.returncode == 0, result.stderr[-2000:]
