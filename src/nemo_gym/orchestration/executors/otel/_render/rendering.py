"""The one place that knows the order: render, parse, check, and only then write atomically.

Every other module does one of these steps; a failure at any step raises before anything is
written, so a broken template or override never reaches a job directory.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from .._checks.collector_config import check_collector_config
from .._checks.tenant import TenantPolicy
from .._common.atomic_file import write_together
from .._common.constants import (
    COLLECTOR_CONFIG_NAME,
    COLLECTOR_DIR,
    DRAIN_CONFIG_NAME,
    INGEST_CONFIG_NAME,
    SENDER_CONFIG_NAME,
)
from .._common.errors import (
    CollectorConfigError,
    CollectorConfigWarning,
    OtelConfigWarning,
    SubmitConfigError,
    TemplateError,
    Violation,
    dotted,
)
from .._common.yaml_fast_dump import dump_in_parts
from .._common.yaml_fast_path import NotPlain
from .._submit.config import SubmitConfig
from .._submit.job_dir_path import JOB_DIR_KEY, check_job_dir, job_dir_warnings
from .._submit.rules import validate_destination
from .._submit.token import refuse_rendered_token, refuse_written_token
from .._templating.catalogue import Line, search_path, template_set
from .._templating.context import check_scrape_paths, checked, template_context
from .._templating.environment import render_template
from .drain_config import drain_document
from .job_files import COMPANION_NAMES, marked
from .sender_config import split_documents


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
    # The benchmark's own name first: a job directory cannot end in a name no value can hold.
    checked(benchmark_name, dotted(["driver", "benchmarks", benchmark_name]))
    bench_dir = check_job_dir(config, benchmark_name, remote_bench_dir)
    check_scrape_paths(config, bench_dir)
    validate_destination(config)
    refuse_written_token(config, {JOB_DIR_KEY: remote_bench_dir})
    return bench_dir


@dataclass(frozen=True)
class Rendering:
    """A rendered config before its checks, with the line that judges it and where it came from."""

    text: str
    line: Line
    template: str  # the template's name
    origin: str  # where the template was found (built-in or an override folder)
    policy: TenantPolicy  # the token and tenant rules of the config it was rendered for
    warnings: tuple[Violation, ...] = ()  # about its inputs (a job directory out of place)


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
    refuse_rendered_token(config, text, info.name)
    otel = config.otel
    policy = TenantPolicy(otel.token_env, otel.listen_host, otel.endpoint, otel.allow_plain_http)
    warnings = tuple(job_dir_warnings(config, bench_dir))
    return Rendering(text, line, info.name, info.origin, policy, warnings)


def check_rendering(rendering: Rendering) -> list[Violation]:
    """Parse and check a rendering; raises with every violation, naming the template. Returns
    its warnings: those of its inputs, then the config's (components no pipeline uses)."""
    return checked_rendering(rendering)[1]


def checked_rendering(rendering: Rendering) -> tuple[Any, list[Violation]]:
    """:func:`check_rendering`, with the parsed config too (``graph`` draws it)."""
    from .._common.yaml_loader import parse_yaml

    source = f"rendered {rendering.template}"
    parsed = parse_yaml(rendering.text, source, TemplateError, collector=True)
    try:
        found = check_collector_config(parsed, rendering.line, source, rendering.policy)
    except CollectorConfigError as exc:
        raise CollectorConfigError(exc.violations, f"{source} ({rendering.origin})") from None
    return parsed, [*rendering.warnings, *found]


def checked_drain_text(rendering: Rendering, parsed: Any) -> str | None:
    """The drain config cut from a checked rendering (see :mod:`.drain_config`), checked by
    the same rules; None when its backend queue is not on disk."""
    document = drain_document(parsed)
    if document is None:
        return None
    source = f"drain config cut from rendered {rendering.template}"
    try:
        check_collector_config(document, rendering.line, source, rendering.policy)
    except CollectorConfigError as exc:
        raise CollectorConfigError(exc.violations, f"{source} ({rendering.origin})") from None
    return _dumped(
        f"# The drain config of {COLLECTOR_CONFIG_NAME} beside it, cut from it by nemo-gym-otel: "
        "its backend path alone,\n# reading what the disk queue holds. Re-render instead of "
        "editing it.\n",
        document,
    )


def companion_texts(rendering: Rendering, parsed: Any) -> dict[str, str] | None:
    """The files a checked rendering with a disk queue gets beside ``collector.yaml``: the
    drain config, and the two processes the job step runs instead of it (see
    :mod:`.sender_config`); None when its backend queue is not on disk."""
    drain = checked_drain_text(rendering, parsed)
    split = split_documents(parsed)
    if drain is None or split is None:
        return None
    ingest, sender = split
    return {
        DRAIN_CONFIG_NAME: drain,
        INGEST_CONFIG_NAME: _dumped(
            f"# What the job step's collector runs of {COLLECTOR_CONFIG_NAME} beside it, cut from "
            f"it by nemo-gym-otel:\n# all but the backend path, which {SENDER_CONFIG_NAME} "
            "runs. Re-render instead of editing it.\n",
            ingest,
        ),
        SENDER_CONFIG_NAME: _dumped(
            f"# The backend path of {COLLECTOR_CONFIG_NAME} beside it, cut from it by "
            "nemo-gym-otel: the job step's\n# sender, fed by the disk queue. Re-render instead "
            "of editing it.\n",
            sender,
        ),
    }


def _dumped(header: str, document: Any) -> str:
    import yaml

    # libyaml's emitter where PyYAML has it (about a tenth of the pure-Python one's time, the
    # same text for every golden rendering), fed events straight from the plain tree (see
    # :mod:`.._common.yaml_fast_dump`): a job's cut configs are dumped at every write.
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    try:
        return header + dump_in_parts(document, dumper, width=100)
    except NotPlain:
        return header + yaml.dump(
            document, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100
        )


def render_checked(
    config: SubmitConfig,
    benchmark_name: str,
    remote_bench_dir: str | os.PathLike[str],
    *,
    template_dirs: Sequence[str | os.PathLike[str]] | None = None,
) -> tuple[str, list[Violation]]:
    """The checked YAML and its warnings, as data (the CLI prints them)."""
    rendering = render_unchecked(
        config, benchmark_name, remote_bench_dir, template_dirs=template_dirs
    )
    return rendering.text, check_rendering(rendering)


def _warn(found: list[Violation]) -> None:
    """Python callers get the warnings the CLI prints: :class:`OtelConfigWarning` for the job
    directory, :class:`CollectorConfigWarning` for the config's own findings."""
    for violation in found:
        kind = OtelConfigWarning if violation.path == JOB_DIR_KEY else CollectorConfigWarning
        warnings.warn(kind(violation), stacklevel=3)


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
    text, found = render_checked(
        config, benchmark_name, remote_bench_dir, template_dirs=template_dirs
    )
    _warn(found)
    return text


def write_collector_config(
    config: SubmitConfig,
    benchmark_name: str,
    remote_bench_dir: str | os.PathLike[str],
    *,
    template_dirs: Sequence[str | os.PathLike[str]] | None = None,
) -> Path:
    """Render, check and atomically write ``<remote_bench_dir>/otel/collector.yaml`` and, when
    the backend's queue is on disk, ``drain.yaml``, ``ingest.yaml`` and ``sender.yaml`` beside
    it (see :func:`write_rendered`)."""
    text, companions, found = render_job_files(
        config, benchmark_name, remote_bench_dir, template_dirs=template_dirs
    )
    target = write_rendered(text, remote_bench_dir, companions)
    _warn(found)
    return target


def render_job_files(
    config: SubmitConfig,
    benchmark_name: str,
    remote_bench_dir: str | os.PathLike[str],
    *,
    template_dirs: Sequence[str | os.PathLike[str]] | None = None,
) -> tuple[str, dict[str, str] | None, list[Violation]]:
    """The checked ``collector.yaml``, the files beside it (name -> text: the drain config and
    the job step's two cuts, :func:`companion_texts`; None without a disk queue) and the
    warnings: everything a job directory gets, before anything is written."""
    rendering = render_unchecked(
        config, benchmark_name, remote_bench_dir, template_dirs=template_dirs
    )
    parsed, found = checked_rendering(rendering)
    return rendering.text, companion_texts(rendering, parsed), found


def write_rendered(
    text: str,
    remote_bench_dir: str | os.PathLike[str],
    companions: Mapping[str, str] | None = None,
) -> Path:
    """Atomically write checked YAML as ``<remote_bench_dir>/otel/collector.yaml`` and its
    ``companions`` (:func:`companion_texts`: ``drain.yaml`` and the job step's two cuts) beside
    it (or remove those an earlier rendering left), each ending in the mark that ties them
    together (see :mod:`.job_files`). What follows speaks of ``drain.yaml``; the cuts are
    written, renamed and checked with it, in the same way.

    All temporaries are written and fsynced (at once), ``drain.yaml`` is renamed (or removed)
    before ``collector.yaml``, and the folder is fsynced once for both. A power loss after any
    of these calls leaves one of these states; each is harmless or refused by the step's start,
    which checks the mark (``CollectorStep.files_mark``):

    - the folders this write made, lost with everything in them (before the folder fsync; or
      after it on a file system that, unlike ext4, XFS and NFS, does not make a ``mkdir``
      durable with it): no ``collector.yaml``, which the start refuses as it always did;
    - before either rename: the earlier pair (consistent, written by an earlier call), or
      nothing; the temporaries, whole or not, are dot files the collector never reads, and the
      next write into the folder removes them once their process is gone;
    - one rename (or the removal) kept, the other lost, since before the folder fsync nothing
      orders them: the earlier ``collector.yaml`` with the new ``drain.yaml``, the new
      ``collector.yaml`` with the earlier one or with one that should have been removed, the
      earlier ``collector.yaml`` without the ``drain.yaml`` it names, or a ``drain.yaml``
      without any ``collector.yaml``: each file is whole (fsynced before its rename), but the
      last lines differ, so the start refuses (or finds no ``collector.yaml``); two renderings
      whose lines agree wrote the very same texts, so a mix of them is the pair;
    - both kept, or the folder fsync done (when this returns): the new pair.

    A failure (an exception, SIGTERM) removes what this write put in place, so it leaves no
    ``drain.yaml`` without its ``collector.yaml`` (``tests/test_crash_states.py`` replays the
    write's calls on a model of every state a crash can leave)."""
    target = collector_config_path(bench_dir_argument(remote_bench_dir))
    collector_text, companion_texts = marked(text, companions)
    files = [(COLLECTOR_CONFIG_NAME, collector_text)]
    try:
        if companion_texts is None:
            write_together(target.parent, files, removed=list(COMPANION_NAMES))
        else:
            write_together(target.parent, [*companion_texts.items(), *files])
    except OSError as exc:
        raise SubmitConfigError(
            "remote_bench_dir",
            f"cannot write {COLLECTOR_DIR}/{COLLECTOR_CONFIG_NAME} below it ({exc.strerror}); "
            "pick a job directory you can write, on a file system with space left",
        ) from None
    return target
