"""Render a collector config, check it, and only then write it into the job directory."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from ._config import SubmitConfig
from ._constants import COLLECTOR_CONFIG_NAME, COLLECTOR_DIR, FINAL_SCRAPE_GRACE_SECONDS
from ._context import template_context
from ._errors import CollectorConfigError, SubmitConfigError, TemplateError
from ._templates import (
    TemplateInfo,
    combination_name,
    format_version,
    search_path,
    template_set,
)
from ._validation import validate_destination
from ._version import package_version, package_version_tuple


def collector_config_path(remote_bench_dir: str | os.PathLike[str]) -> Path:
    return Path(remote_bench_dir) / COLLECTOR_DIR / COLLECTOR_CONFIG_NAME


def check_render_inputs(
    config: SubmitConfig, benchmark_name: str, remote_bench_dir: str
) -> PurePosixPath:
    if not config.otel.enabled:
        raise SubmitConfigError(
            "otel.enabled",
            "is false, so the job runs no collector; set it to true to render a collector config",
        )
    if benchmark_name not in config.driver.benchmarks:
        known = ", ".join(config.driver.benchmarks)
        raise SubmitConfigError(
            "benchmark_name",
            f"{benchmark_name!r} is not one of driver.benchmarks ({known}); pick one of them",
        )
    bench_dir = PurePosixPath(os.fspath(remote_bench_dir))
    if not bench_dir.is_absolute():
        raise SubmitConfigError(
            "remote_bench_dir",
            "must be an absolute path: the collector runs in the job's working directory, not the submitter's",
        )
    if {".", ".."} & set(os.fspath(remote_bench_dir).split("/")):
        # PurePosixPath drops "." and keeps "..", so the parent would not be the run's folder.
        raise SubmitConfigError(
            "remote_bench_dir",
            "must not contain '.' or '..' segments: run_id is the name of the job directory's "
            "parent; pass <output_path>/<gym_job_id>/<benchmark> without them",
        )
    interval = config.otel.scrape_interval_seconds
    if interval > FINAL_SCRAPE_GRACE_SECONDS:
        raise SubmitConfigError(
            "otel.scrape_interval_seconds",
            f"{interval} is longer than the {FINAL_SCRAPE_GRACE_SECONDS}s the collector outlives the driver, "
            f"so the final counters would never be scraped; use at most {FINAL_SCRAPE_GRACE_SECONDS}",
        )
    validate_destination(config)
    return bench_dir


def select_template(
    config: SubmitConfig, template_dirs: Sequence[str | os.PathLike[str]] | None = None
) -> tuple[TemplateInfo, str]:
    """The combination template for ``config`` and the name of the schema that checks it."""
    templates = template_set(search_path(template_dirs))
    line = templates.line_for(config.otel.collector_version)
    combination = combination_name(config.otel.exporters)
    info = line.templates.get(combination)
    if info is None:
        raise TemplateError(
            f"{line.name}/{combination}",
            f"line {line.name!r} has no template for exporters {combination}; add one or change otel.exporters",
        )
    if info.requires_package > package_version_tuple():
        raise TemplateError(
            info.name,
            f"needs nemo-gym-otel {format_version(info.requires_package)} or newer, but {package_version()} is installed; "
            "upgrade the package or use an older template",
        )
    return info, line.name


def render_collector_config(
    config: SubmitConfig,
    benchmark_name: str,
    remote_bench_dir: str | os.PathLike[str],
    *,
    template_dirs: Sequence[str | os.PathLike[str]] | None = None,
) -> str:
    """The collector YAML for one benchmark job, already checked against its line's schema.

    ``template_dirs`` overrides ``NEMO_GYM_OTEL_TEMPLATE_PATH``; both come before the built-in
    templates. A violation raises: a broken template or override never reaches a job directory.
    """
    from ._collector_check import check_collector_config
    from ._reparse import RENDERINGS

    bench_dir = check_render_inputs(config, benchmark_name, os.fspath(remote_bench_dir))
    info, line = select_template(config, template_dirs)
    meta = {
        "package_version": package_version(),
        "template": info.name,
        "line": info.line,
        "combination": info.combination,
        "template_version": info.template_version,
        "origin": info.origin,
        "collector_range": info.collector_range,
    }
    context = template_context(config, benchmark_name, bench_dir, meta)
    text = template_set(search_path(template_dirs)).render(info, context)
    source = f"rendered {info.name}"
    parsed = RENDERINGS.parse(text, (info.origin, info.name), source, TemplateError)
    try:
        check_collector_config(parsed, line, source)
    except CollectorConfigError as exc:
        raise CollectorConfigError(exc.violations, f"{source} ({info.origin})") from None
    return text


def write_collector_config(
    config: SubmitConfig,
    benchmark_name: str,
    remote_bench_dir: str | os.PathLike[str],
    *,
    template_dirs: Sequence[str | os.PathLike[str]] | None = None,
) -> Path:
    """Render, check and atomically write ``<remote_bench_dir>/otel/collector.yaml``.

    The file appears whole or not at all: it is written to a temporary file in the same folder,
    fsynced and renamed over the target. A failure leaves no folder behind that it created.
    """
    text = render_collector_config(
        config, benchmark_name, remote_bench_dir, template_dirs=template_dirs
    )
    target = collector_config_path(remote_bench_dir)
    missing = []  # deepest first, up to the first folder that exists
    folder = target.parent
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    created: list[Path] = []
    temporary = None
    try:
        for folder in reversed(missing):
            try:
                folder.mkdir()
            except FileExistsError:
                if not folder.is_dir():
                    raise
                continue  # made meanwhile by someone else: not ours to remove
            created.append(folder)
        fd, temporary = tempfile.mkstemp(prefix=f".{COLLECTOR_CONFIG_NAME}.", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        for folder in reversed(created):
            _remove_if_empty(folder)
        raise
    return target


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()
