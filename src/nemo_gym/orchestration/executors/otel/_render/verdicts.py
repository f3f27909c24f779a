"""Verdicts on configs, for ``validate`` and ``check``: the package's, and a collector's own.

A platform team's CI asks one question of every config it ships (a file, or every line x
combination rendered from a submit config): would the package write it, and would the collector
start on it? The answers are data here; how they are shown lives in the views.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

from .._checks.binary import CollectorVerdict, collector_verdict
from .._checks.collector_config import validate_collector_config
from .._checks.tenant import TenantPolicy
from .._common.errors import (
    CollectorConfigError,
    CollectorConfigWarning,
    OtelConfigError,
    Violation,
)
from .._common.text_file import read_text_file
from .._submit.config import SubmitConfig
from .._templating.catalogue import Line, format_version
from .rendering import check_rendering, render_unchecked


@dataclasses.dataclass(frozen=True)
class ConfigVerdict:
    """One config judged: what it is, the package's violations and warnings, and the
    collector's verdict when a binary was asked."""

    subject: dict[str, str]  # {"file": ...} or {"config": ..., "line": ..., "combination": ...,
    # "origin": "built-in" or the override folder the template came from}
    violations: tuple[Violation, ...]
    collector: CollectorVerdict | None
    warnings: tuple[Violation, ...] = ()

    @property
    def label(self) -> str:
        s = self.subject
        if "file" in s:
            return s["file"]
        if "line" not in s:  # a submit config that did not load
            return s["config"]
        return f"{s['config']}: {s['line']}/{s['combination']}"

    @property
    def valid(self) -> bool:
        return not self.violations and (self.collector is None or self.collector.valid)

    def as_json(self) -> dict[str, object]:
        collector = None
        if self.collector is not None:
            collector = dataclasses.asdict(self.collector)
        return {
            **self.subject,
            "valid": self.valid,
            "violations": [{"path": v.path, "message": v.message} for v in self.violations],
            "warnings": [{"path": v.path, "message": v.message} for v in self.warnings],
            "collector": collector,
        }


@contextlib.contextmanager
def caught_warnings(found: list[Violation]) -> Iterator[None]:
    """Collect each :class:`CollectorConfigWarning` raised meanwhile (a deprecated name) into
    ``found``, shown with the rest; the verdict stays that of the errors."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CollectorConfigWarning)
        try:
            yield
        finally:
            for item in caught:
                if isinstance(item.message, CollectorConfigWarning):
                    found.append(item.message.violation)
                else:
                    warnings.showwarning(item.message, item.category, item.filename, item.lineno)


def read_collector_yaml(path: Path) -> str:
    """A collector YAML file's text, or a :class:`CollectorConfigError` naming it."""
    return read_text_file(
        str(path), lambda where, message: CollectorConfigError([Violation(where, message)])
    )


def judge_file(
    path: Path,
    collector_version: str | None,
    policy: TenantPolicy,
    *,
    template_dirs: Sequence[str | os.PathLike[str]] | None = None,
    collector: str | None = None,
) -> ConfigVerdict:
    """A collector YAML file judged by its line's checks and the token and tenant rules of
    ``policy``, and by ``collector``'s own validate when given."""
    violations: tuple[Violation, ...] = ()
    found: list[Violation] = []
    text = None
    try:
        text = read_collector_yaml(path)
        with caught_warnings(found):
            validate_collector_config(
                text,
                collector_version,
                source=str(path),
                template_dirs=template_dirs,
                token_env=policy.token_env,
                listen_host=policy.listen_host,
                endpoint=policy.endpoint,
                allow_plain_http=policy.allow_plain_http,
            )
    except CollectorConfigError as exc:
        violations = tuple(exc.violations)
    verdict = collector_verdict(collector, text) if collector and text is not None else None
    return ConfigVerdict({"file": str(path)}, violations, verdict, tuple(found))


def example_job_dir(config: SubmitConfig, gym_job_id: str, benchmark: object) -> str:
    """A job directory of the seed's shape for a rendering no job will use (graph, check)."""
    output_path = str(PurePosixPath(config.job.output_path))
    return f"{output_path.rstrip('/')}/{gym_job_id}/{benchmark}"


def asking_for(config: SubmitConfig, combination: str, collector_version: str) -> SubmitConfig:
    """``config`` with the exporters of ``combination`` (``otlp_http+file``) for a collector
    of ``collector_version``."""
    otel = dataclasses.replace(
        config.otel, exporters=tuple(combination.split("+")), collector_version=collector_version
    )
    return dataclasses.replace(config, otel=otel)


def line_variants(config: SubmitConfig, line: Line) -> Iterator[tuple[str, SubmitConfig]]:
    """(combination, ``config`` asking for it at the line's lowest release) for every
    combination ``line`` has: the matrix ``check`` renders, and the tests with it."""
    for combination in sorted(line.templates):
        yield combination, asking_for(config, combination, format_version(line.collector_min))


def judge_renderings(
    name: str,
    config_path: Path,
    lines: Sequence[Line],
    *,
    template_dirs: Sequence[str | os.PathLike[str]] | None = None,
    collector: str | None = None,
) -> list[ConfigVerdict]:
    """Every line x combination rendered from the submit config at ``config_path`` (its first
    benchmark) and checked, and put before ``collector``'s validate when given: a platform
    team's CI gate. A submit config that does not load is one verdict, named ``name``."""
    try:
        config = SubmitConfig.from_yaml(config_path)
    except OtelConfigError as exc:
        return [ConfigVerdict({"config": name}, tuple(exc.violations), None)]
    benchmark = next(iter(config.driver.benchmarks))
    job_dir = example_job_dir(config, "nemo-gym-otel-check", benchmark)
    verdicts = []
    for line in lines:
        for combination, variant in line_variants(config, line):
            subject = {"config": name, "line": line.name, "combination": combination}
            verdicts.append(
                _judge_rendering(variant, benchmark, job_dir, subject, template_dirs, collector)
            )
    return verdicts


def _judge_rendering(
    variant: SubmitConfig,
    benchmark: str,
    job_dir: str,
    subject: dict[str, str],
    template_dirs: Sequence[str | os.PathLike[str]] | None,
    collector: str | None,
) -> ConfigVerdict:
    try:
        rendering = render_unchecked(variant, benchmark, job_dir, template_dirs=template_dirs)
    except OtelConfigError as exc:
        return ConfigVerdict(subject, tuple(exc.violations), None)
    subject = {**subject, "origin": rendering.origin}
    violations: tuple[Violation, ...] = ()
    found: list[Violation] = []
    try:
        with caught_warnings(found):
            found += check_rendering(rendering)
    except OtelConfigError as exc:
        violations = tuple(exc.violations)
    verdict = collector_verdict(collector, rendering.text) if collector else None
    return ConfigVerdict(subject, violations, verdict, tuple(found))
