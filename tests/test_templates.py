"""Template lines, the override rule, the strict environment and template metadata."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from support import helpers

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import (
    CollectorConfigError,
    TemplateError,
    render_collector_config,
)

BENCH_DIR = "/runs/g1/aime25"


def front_matter(requires: str = "0.1.0", version: str = "9") -> str:
    return f"{{#- nemo-gym-otel\ntemplate_version: {version}\nrequires_package: {requires}\n-#}}\n"


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def config(example_mapping: dict) -> SubmitConfig:
    return SubmitConfig.from_dict(example_mapping)


def with_otel(example_mapping: dict, **otel: object) -> SubmitConfig:
    example_mapping["otel"].update(otel)
    return SubmitConfig.from_dict(example_mapping)


@pytest.mark.parametrize(
    ("version", "line"),
    [
        ("0.130.0", "legacy"),
        ("0.141.0", "legacy"),
        ("0.153.9", "legacy"),
        ("0.154.0", "current"),
        ("0.161.0", "current"),
        ("v1.2.0", "current"),
        (None, "current"),
    ],
)
def test_collector_version_picks_the_line(
    example_mapping: dict, version: str | None, line: str
) -> None:
    text = render_collector_config(
        with_otel(example_mapping, collector_version=version), "aime25", BENCH_DIR
    )
    assert f"line {line}," in text.splitlines()[1]


def test_unsupported_collector_version_lists_the_ranges(example_mapping: dict) -> None:
    with pytest.raises(TemplateError) as caught:
        render_collector_config(
            with_otel(example_mapping, collector_version="0.110.0"), "aime25", BENCH_DIR
        )
    assert caught.value.path == "otel.collector_version"
    assert "legacy: >=0.130.0, <0.154.0" in str(caught.value) and "current: >=0.154.0" in str(
        caught.value
    )


def test_override_replaces_the_builtin_of_the_same_name(
    tmp_path: Path, config: SubmitConfig
) -> None:
    builtin = (helpers.REPO / "templates" / "current" / "otlp_http+file.yaml.j2").read_text(
        encoding="utf-8"
    )
    write(
        tmp_path,
        "current/otlp_http+file.yaml.j2",
        builtin.replace("template_version: 9", "template_version: 91"),
    )
    text = render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path])
    assert "template version 91" in text.splitlines()[1]
    assert str(tmp_path.resolve()) in text.splitlines()[1]


def test_override_extends_the_builtin_and_redefines_a_block(
    tmp_path: Path, config: SubmitConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        tmp_path,
        "current/otlp_http+file.yaml.j2",
        front_matter() + '{% extends "builtin/current/otlp_http+file.yaml.j2" %}\n'
        "{% block telemetry %}\n    logs:\n      level: info\n    metrics:\n      level: none\n{% endblock %}\n",
    )
    monkeypatch.setenv(
        "NEMO_GYM_OTEL_TEMPLATE_PATH",
        os.pathsep.join([str(tmp_path / "missing-is-ignored-not"), str(tmp_path)]).split(
            os.pathsep, 1
        )[1],
    )
    text = render_collector_config(config, "aime25", BENCH_DIR)
    telemetry = yaml.safe_load(text)["service"]["telemetry"]
    assert telemetry == {"logs": {"level": "info"}, "metrics": {"level": "none"}}
    assert "template version 9" in text.splitlines()[1]


def test_overridden_output_passes_the_same_checks(tmp_path: Path, config: SubmitConfig) -> None:
    write(
        tmp_path,
        "current/otlp_http+file.yaml.j2",
        front_matter() + '{% extends "builtin/current/otlp_http+file.yaml.j2" %}\n'
        "{% block pipelines %}\n    traces/ingest:\n      receivers: [otlp]\n      exporters: [nowhere]\n{% endblock %}\n",
    )
    with pytest.raises(CollectorConfigError) as caught:
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path])
    assert any(
        v.path == "service.pipelines.traces/ingest.exporters.nowhere"
        for v in caught.value.violations
    )
    assert "current/otlp_http+file.yaml.j2" in str(caught.value)


def test_undefined_variable_fails_instead_of_rendering_empty(
    tmp_path: Path, config: SubmitConfig
) -> None:
    write(
        tmp_path,
        "current/otlp_http+file.yaml.j2",
        front_matter() + '{% extends "builtin/current/otlp_http+file.yaml.j2" %}\n'
        "{% block telemetry %}    logs: {level: {{ log_levle | scalar }}}\n{% endblock %}\n",
    )
    with pytest.raises(TemplateError, match="log_levle"):
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path])


def test_syntax_error_names_the_template_line(tmp_path: Path, config: SubmitConfig) -> None:
    write(
        tmp_path,
        "current/otlp_http+file.yaml.j2",
        front_matter() + "a: 1\n{% if %}\n",
    )
    with pytest.raises(TemplateError) as caught:
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path])
    assert caught.value.path == "current/otlp_http+file.yaml.j2:6"


def test_loader_refuses_files_outside_the_template_folder(
    tmp_path: Path, config: SubmitConfig
) -> None:
    outside = write(tmp_path, "outside/secret.j2", "stolen: true\n")
    overrides = tmp_path / "overrides"
    write(
        overrides,
        "current/otlp_http+file.yaml.j2",
        front_matter() + '{% include "current/leak.j2" %}\n',
    )
    (overrides / "current" / "leak.j2").symlink_to(outside)
    with pytest.raises(TemplateError, match="outside"):
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[overrides])
    dotted = tmp_path / "dotted"
    write(
        dotted,
        "current/otlp_http+file.yaml.j2",
        front_matter() + '{% include "../outside/secret.j2" %}\n',
    )
    with pytest.raises(TemplateError, match="not found"):
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[dotted])


def test_sandbox_blocks_python_internals(tmp_path: Path, config: SubmitConfig) -> None:
    write(
        tmp_path,
        "current/otlp_http+file.yaml.j2",
        front_matter() + "{{ ''.__class__.__mro__[1].__subclasses__() }}\n",
    )
    with pytest.raises(TemplateError):
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path])


def test_template_demanding_a_newer_package_names_both_versions(
    tmp_path: Path, config: SubmitConfig
) -> None:
    builtin = (helpers.REPO / "templates" / "current" / "otlp_http+file.yaml.j2").read_text(
        encoding="utf-8"
    )
    write(
        tmp_path,
        "current/otlp_http+file.yaml.j2",
        builtin.replace("requires_package: 0.1.0", "requires_package: 9.0.0"),
    )
    with pytest.raises(
        TemplateError, match=r"needs nemo-gym-otel 9\.0\.0 or newer, but 0\.1\.0 is installed"
    ):
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\n", "no front matter"),
        (front_matter().replace("template_version: 9\n", ""), "lacks template_version"),
        (front_matter().replace("requires_package", "requires_pkg"), "unknown front-matter line"),
        (front_matter() + "", None),
        (front_matter(requires="latest"), "not a release"),
    ],
)
def test_bad_front_matter(
    tmp_path: Path, config: SubmitConfig, text: str, message: str | None
) -> None:
    write(
        tmp_path,
        "current/otlp_http+file.yaml.j2",
        text + '{% extends "builtin/current/otlp_http+file.yaml.j2" %}\n',
    )
    if message is None:  # the well-formed control case renders
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path])
        return
    with pytest.raises(TemplateError, match=message):
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path])


def test_the_collector_range_comes_from_line_yaml_not_front_matter(
    tmp_path: Path, config: SubmitConfig
) -> None:
    write(
        tmp_path,
        "current/otlp_http+file.yaml.j2",
        front_matter().replace("requires_package", "collector_min: 0.150.0\nrequires_package")
        + '{% extends "builtin/current/otlp_http+file.yaml.j2" %}\n',
    )
    with pytest.raises(TemplateError, match=r"live in line\.yaml"):
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path])


def test_a_line_added_by_override_renders_with_its_own_names_and_a_builtin_schema(
    tmp_path: Path, example_mapping: dict
) -> None:
    helpers.add_line(tmp_path, "older", "0.120.0", "0.130.0")
    text = render_collector_config(
        with_otel(example_mapping, collector_version="0.125.0"),
        "aime25",
        BENCH_DIR,
        template_dirs=[tmp_path],
    )
    assert "line older" in text.splitlines()[1]
    assert "for collector releases >=0.120.0, <0.130.0" in text.splitlines()[2]
    parsed = yaml.safe_load(text)
    assert "otlphttp/backend" in parsed["exporters"]
    assert "spanmetrics" in parsed["connectors"]


def test_a_line_added_by_override_may_bring_its_own_schema(
    tmp_path: Path, example_mapping: dict
) -> None:
    """The schema beside the line's templates is the one that judges its output: one that
    refuses the batch processor makes the render fail there."""
    helpers.add_line(tmp_path, "older", "0.120.0", "0.130.0", schema="older.schema.json")
    schema = json.loads(
        (helpers.REPO / "schemas" / "collector-legacy.schema.json").read_text("utf-8")
    )
    schema["$id"] = "https://nemo-gym-otel.invalid/schemas/older.schema.json"
    schema["properties"]["processors"]["patternProperties"].pop("^batch(/[^\\s]+)?(?![\\s\\S])")
    write(tmp_path, "older/older.schema.json", json.dumps(schema))
    config = with_otel(example_mapping, collector_version="0.125.0")
    with pytest.raises(CollectorConfigError) as caught:
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path])
    assert [v.path for v in caught.value.violations] == ["processors.batch"]


@pytest.mark.parametrize(
    ("line_yaml", "message"),
    [
        (None, "no line.yaml"),
        ("collector_min: 0.120.0\n", "lacks collector_max, schema, names"),
        (
            helpers.LINE_YAML.format(
                low="0.120.0", high="0.130.0", schema="nope.json", names=helpers.LEGACY_NAMES
            ),
            "neither beside",
        ),
        (
            helpers.LINE_YAML.format(
                low="0.120.0",
                high="0.130.0",
                schema="collector-legacy.schema.json",
                names="  x: y\n",
            ),
            "must map exactly otlp_http, span_metrics",
        ),
        (
            helpers.LINE_YAML.format(
                low="old",
                high="0.130.0",
                schema="collector-legacy.schema.json",
                names=helpers.LEGACY_NAMES,
            ),
            "not a release",
        ),
        (
            helpers.LINE_YAML.format(
                low="0.150.0",
                high="0.160.0",
                schema="collector-legacy.schema.json",
                names=helpers.LEGACY_NAMES,
            ),
            "overlaps",
        ),
    ],
)
def test_bad_line_yaml(
    tmp_path: Path, config: SubmitConfig, line_yaml: str | None, message: str
) -> None:
    helpers.add_line(tmp_path, "older", "0.120.0", "0.130.0")
    if line_yaml is None:
        (tmp_path / "older" / "line.yaml").unlink()
    else:
        write(tmp_path, "older/line.yaml", line_yaml)
    with pytest.raises(TemplateError, match=message):
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path])


def test_missing_template_dir_is_an_error(config: SubmitConfig, tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="does not exist"):
        render_collector_config(config, "aime25", BENCH_DIR, template_dirs=[tmp_path / "nope"])


def test_combination_templates_share_one_skeleton() -> None:
    """No receivers, processors or pipelines block is written twice: combinations only extend."""
    for template in (helpers.REPO / "templates").glob("*/*.yaml.j2"):
        body = template.read_text(encoding="utf-8")
        if template.parent.name == "_base":
            continue
        for section in ("receivers:", "processors:", "pipelines:", "exporters:"):
            assert section not in body, f"{template.relative_to(helpers.REPO)} repeats {section}"
        assert "{% extends" in body
