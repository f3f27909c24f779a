"""Rendering every line x combination of a submit config, as the tests need it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import yaml

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import render_collector_config

REPO = Path(__file__).resolve().parents[1]
COMBINATIONS = ("otlp_http+file", "otlp_http", "file")


def line_metadata() -> dict[str, dict]:
    """Each built-in line's ``line.yaml``, by line name."""
    return {
        path.parent.name: yaml.safe_load(path.read_text(encoding="utf-8"))
        for path in sorted((REPO / "templates").glob("*/line.yaml"))
    }


def line_versions() -> dict[str, str]:
    """Each built-in line and the lowest collector release its ``line.yaml`` claims."""
    return {name: str(meta["collector_min"]) for name, meta in line_metadata().items()}


def variant(config: SubmitConfig, line_version: str, combination: str) -> SubmitConfig:
    otel = dataclasses.replace(
        config.otel, exporters=tuple(combination.split("+")), collector_version=line_version
    )
    return dataclasses.replace(config, otel=otel)


def job_dir(config: SubmitConfig, benchmark: str, gym_job_id: str = "gym-20261202-0001") -> str:
    return f"{config.job.output_path}/{gym_job_id}/{benchmark}"


def render_variants(config: SubmitConfig) -> Iterator[tuple[str, str, str]]:
    """(line, combination, rendered YAML) for the config's first benchmark."""
    benchmark = next(iter(config.driver.benchmarks))
    for line, version in line_versions().items():
        for combination in COMBINATIONS:
            text = render_collector_config(
                variant(config, version, combination), benchmark, job_dir(config, benchmark)
            )
            yield line, combination, text
