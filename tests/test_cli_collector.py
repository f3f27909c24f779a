"""``check`` and ``validate`` with ``--collector BINARY`` and ``--format json``.

The binary's own ``validate`` judges what no schema can (an OTTL condition that does not
parse); its verdict is reported beside the package's, in text and as one JSON object per
rendering or file. The collector tests use the platform collector of the current line.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml
from support import helpers
from support.otelcol import collector_binary
from support.platform_corpus import override_with_filter

from nemo_gym.orchestration.executors.otel._checks.binary import (
    PLACEHOLDER,
    placeholder_environment,
)

TOKEN = "cli-collector-secret-token"


def _override(root: Path, condition: str) -> Path:
    """The platform team's filter override of the current line, with ``condition``."""
    folder = root / "templates"
    (folder / "current").mkdir(parents=True)
    text = override_with_filter("current").replace(
        "severity_number < SEVERITY_NUMBER_INFO", condition
    )
    (folder / "current" / "otlp_http+file.yaml.j2").write_text(text, encoding="utf-8")
    return folder


def test_check_format_json_has_one_object_per_rendering(tmp_path: Path) -> None:
    result = helpers.run_cli("check", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    objects = json.loads(result.stdout)
    lines = helpers.line_versions()
    assert {(o["line"], o["combination"]) for o in objects} == {
        (line, combination) for line in lines for combination in helpers.COMBINATIONS
    }
    assert all(o["valid"] and o["violations"] == [] and o["collector"] is None for o in objects)


def test_validate_format_json_lists_the_violations(tmp_path: Path) -> None:
    bad = tmp_path / "collector.yaml"
    bad.write_text(
        "receivers: {otlp: {protocols: {}}}\nexporters: {debug: null}\n", encoding="utf-8"
    )
    result = helpers.run_cli("validate", bad, "--format", "json", cwd=tmp_path)
    assert result.returncode == 1
    [judged] = json.loads(result.stdout)
    assert judged["file"] == str(bad) and judged["valid"] is False
    paths = {v["path"] for v in judged["violations"]}
    assert {"receivers.otlp.protocols", "service"} <= paths


def test_a_binary_that_cannot_run_is_one_message_naming_the_flag(tmp_path: Path) -> None:
    fake = tmp_path / "otelcol"
    fake.write_text("#!/bin/sh\necho 'no version here'\n", encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    for args in (("check",), ("validate", helpers.EXAMPLE)):
        result = helpers.run_cli(*args, "--collector", fake, cwd=tmp_path)
        assert result.returncode == 1
        assert helpers.error_lines(result.stderr) == [
            f"--collector: cannot run {fake} (its --version names no release); pass the path "
            "of an OpenTelemetry Collector binary"
        ]
    missing = helpers.run_cli("check", "--collector", tmp_path / "nope", cwd=tmp_path)
    assert missing.returncode == 1 and "--collector: cannot run" in missing.stderr


@pytest.mark.collector
def test_check_collector_catches_what_no_schema_can(tmp_path: Path) -> None:
    """The package reads OTTL's syntax, functions, paths, arguments and enum symbols; a value a
    function checks when the collector creates it (a time zone, which the binary's own tz
    database knows or not) only the collector can judge."""
    binary = collector_binary("current-platform")
    broken = _override(tmp_path, 'Time(body, "%Y", "Nowhere/Nope") != nil')
    package_only = helpers.run_cli("check", "--template-dir", broken, cwd=tmp_path)
    assert package_only.returncode == 0, package_only.stderr
    env = helpers.cli_env(OTEL_TOKEN=TOKEN)
    result = helpers.run_cli(
        "check",
        "--template-dir",
        broken,
        "--collector",
        binary,
        "--format",
        "json",
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 1
    objects = {o["combination"]: o for o in json.loads(result.stdout)}
    assert {o["line"] for o in objects.values()} == {"current"}  # the binary's release picks it
    failed = objects["otlp_http+file"]
    assert failed["violations"] == [] and failed["collector"]["valid"] is False
    assert "Nowhere/Nope" in failed["collector"]["message"]
    assert all(objects[c]["collector"]["valid"] for c in ("otlp_http", "file"))
    assert TOKEN not in result.stdout + result.stderr


@pytest.mark.collector
def test_validate_collector_reports_both_verdicts(tmp_path: Path) -> None:
    binary = collector_binary("current-platform")
    good = _override(tmp_path, "severity_number < SEVERITY_NUMBER_INFO")
    rendered = helpers.rendered_example(tmp_path, "--template-dir", good)
    path = tmp_path / "collector.yaml"
    path.write_text(rendered, encoding="utf-8")
    result = helpers.run_cli("validate", path, "--collector", binary, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{path}: valid (collector {binary}: valid)\n"
    path.write_text(rendered.replace("batch:\n", "batch:\n    no_such_option: 1\n", 1))
    result = helpers.run_cli("validate", path, "--collector", binary, cwd=tmp_path)
    assert result.returncode == 1
    errors = helpers.error_lines(result.stderr)
    assert any(e.startswith("processors.batch.no_such_option: unknown key") for e in errors)
    assert any(
        e.startswith(f"{path}: collector {binary}: ") and "no_such_option" in e for e in errors
    )


def test_the_collector_sees_placeholders_not_the_callers_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TOKEN", TOKEN)
    text = 'a: "${env:OTEL_TOKEN}"\nb: "${env:SLURM_JOB_ID}-${USER}"\nc: "$${env:NOT_EXPANDED}"\n'
    env = placeholder_environment(text)
    assert env.pop("PATH") == os.environ["PATH"]
    assert env == dict.fromkeys(("OTEL_TOKEN", "SLURM_JOB_ID", "USER"), PLACEHOLDER)


def test_deprecated_names_warn_and_pass(tmp_path: Path) -> None:
    """Names the current line's collectors still load as aliases (otlphttp, spanmetrics): one
    warning each, naming the new name, and exit 0; the tenant rules still see the exporter."""
    text = helpers.rendered_example(tmp_path)
    assert "otlp_http/backend" in text and "span_metrics" in text
    old = text.replace("otlp_http/backend", "otlphttp/backend").replace(
        "span_metrics", "spanmetrics"
    )
    path = tmp_path / "old-names.yaml"
    path.write_text(old, encoding="utf-8")
    result = helpers.run_cli("validate", path, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith(helpers.WARNING)]
    assert len(warnings) == 2, result.stderr
    assert any("exporters.otlphttp/backend" in w and "'otlp_http'" in w for w in warnings)
    assert any("connectors.spanmetrics" in w and "'span_metrics'" in w for w in warnings)
    leaky = yaml.safe_load(old)  # the tenant rules judge the old name too
    for pipeline in leaky["service"]["pipelines"].values():
        pipeline["processors"] = [p for p in pipeline.get("processors", []) if "tenant" not in p]
    path.write_text(yaml.safe_dump(leaky), encoding="utf-8")
    result = helpers.run_cli("validate", path, cwd=tmp_path)
    assert result.returncode != 0 and "otlphttp/backend" in result.stderr, result.stderr
