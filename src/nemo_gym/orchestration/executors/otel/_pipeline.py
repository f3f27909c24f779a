"""The one place that knows the order: render, parse, check, and only then write atomically.

Every other module does one of these steps; a failure at any step raises before anything is
written, so a broken template or override never reaches a job directory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ._checks.collector import check_collector_config
from ._checks.tenant import TenantPolicy
from ._common.atomic_file import write_atomically
from ._common.constants import COLLECTOR_CONFIG_NAME, COLLECTOR_DIR
from ._common.errors import CollectorConfigError, SubmitConfigError, TemplateError
from ._submit.config import SubmitConfig
from ._submit.rules import validate_destination
from ._templating.catalogue import Line, search_path, template_set
from ._templating.context import template_context
from ._templating.environment import render_template


def collector_config_path(remote_bench_dir: str | os.PathLike[str]) -> Path:
    return Path(remote_bench_dir) / COLLECTOR_DIR / COLLECTOR_CONFIG_NAME


def bench_dir_argument(remote_bench_dir: object) -> str:
    """``remote_bench_dir`` as text, or an error naming it (an API caller may pass anything)."""
    if not isinstance(remote_bench_dir, (str, os.PathLike)):
        raise SubmitConfigError("remote_bench_dir", "must be a path (str or os.PathLike)")
    path = os.fspath(remote_bench_dir)
    if not isinstance(path, str):
        raise SubmitConfigError("remote_bench_dir", "must be a text path, not bytes")
    return path


def check_render_inputs(
    config: SubmitConfig, benchmark_name: str, remote_bench_dir: str
) -> PurePosixPath:
    if not config.otel.enabled:
        raise SubmitConfigError(
            "otel.enabled",
            "is false, so the job runs no collector; set it to true to render a collector config",
        )
    if not isinstance(benchmark_name, str) or benchmark_name not in config.driver.benchmarks:
        known = ", ".join(config.driver.benchmarks)
        raise SubmitConfigError(
            "benchmark_name",
            f"is not one of driver.benchmarks ({known}); pick one of them",
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
    validate_destination(config)
    return bench_dir


@dataclass(frozen=True)
class Rendering:
    """A rendered config before its checks, with the line that judges it and where it came from."""

    text: str
    line: Line
    template: str  # the template's name
    origin: str  # where the template was found (built-in or an override folder)
    policy: TenantPolicy  # the token and tenant rules of the config it was rendered for


def render_unchecked(
    config: SubmitConfig,
    benchmark_name: str,
    remote_bench_dir: str | os.PathLike[str],
    *,
    template_dirs: Sequence[str | os.PathLike[str]] | None = None,
) -> Rendering:
    """Only the rendering step: ``check rendering`` needs the text of a config its checks
    refuse too, to put it before a collector binary as well."""
    bench_dir = check_render_inputs(config, benchmark_name, bench_dir_argument(remote_bench_dir))
    templates = template_set(search_path(template_dirs))
    info, line = templates.select(config.otel.collector_version, config.otel.exporters)
    context = template_context(config, benchmark_name, bench_dir, info, line)
    text = render_template(templates, info, context)
    policy = TenantPolicy(config.otel.token_env, config.otel.listen_host, config.otel.endpoint)
    return Rendering(text, line, info.name, info.origin, policy)


def check_rendering(rendering: Rendering) -> None:
    """Parse and check a rendering; raises with every violation, naming the template."""
    from ._common.yaml_loader import parse_yaml

    source = f"rendered {rendering.template}"
    parsed = parse_yaml(rendering.text, source, TemplateError)
    try:
        check_collector_config(parsed, rendering.line, source, rendering.policy)
    except CollectorConfigError as exc:
        raise CollectorConfigError(exc.violations, f"{source} ({rendering.origin})") from None


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
    rendering = render_unchecked(
        config, benchmark_name, remote_bench_dir, template_dirs=template_dirs
    )
    check_rendering(rendering)
    return rendering.text


def write_collector_config(
    config: SubmitConfig,
    benchmark_name: str,
    remote_bench_dir: str | os.PathLike[str],
    *,
    template_dirs: Sequence[str | os.PathLike[str]] | None = None,
) -> Path:
    """Render, check and atomically write ``<remote_bench_dir>/otel/collector.yaml``."""
    text = render_collector_config(
        config, benchmark_name, remote_bench_dir, template_dirs=template_dirs
    )
    target = collector_config_path(bench_dir_argument(remote_bench_dir))
    try:
        write_atomically(target, text)
    except OSError as exc:
        raise SubmitConfigError(
            "remote_bench_dir",
            f"cannot write {COLLECTOR_DIR}/{COLLECTOR_CONFIG_NAME} below it ({exc.strerror}); "
            "pick a job directory you can write, on a file system with space left",
        ) from None
    return target
