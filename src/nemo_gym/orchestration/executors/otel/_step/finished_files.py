"""The job step compresses the files a collector without native zstd finished.

Collectors before v0.154.0 (the legacy line) write JSON lines only: 185 GB a day at the large
job's load. Their file exporters rotate (``otel.file_rotation``, else ``STEP_ROTATION``), and a
file rotation renamed ``<signal>-<UTC time>.jsonl`` is never written again: the step compresses
it into ``<signal>-<UTC time>.jsonl.zst`` (a standard zstd stream, ``zstdcat`` reads it) and
removes it, every ``COMPRESS_EVERY_SECONDS`` while the collector runs and once more after the
stop (the stop's drain may finish a file too). Each file is written as ``*.zst.part`` first and
renamed, so a step killed mid-way leaves no stream that looks whole, and the plain file stays
until its compressed copy is complete. A rotating exporter opens its file only at its first
item, so the start creates the live files first: a signal the job never sent is an empty file,
as on the other line, not a missing one. Beyond ``max_backups`` finished files (0: keep all), the
oldest compressed ones are deleted, as the exporter deletes its own renamed files. Without the
``zstd`` command on the node the files stay JSON lines and the start says so once.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

from .._common.constants import ZSTD_SUFFIX
from .._templating.file_compression import finished_file_glob, signal_file_name

COMPRESS_EVERY_SECONDS = 30
PART_SUFFIX = ".part"


def finished_file_globs(otel_dir: PurePosixPath, signals: Iterable[str]) -> tuple[str, ...]:
    """The names a rotation gives the files it finished, as globs."""
    return tuple(str(otel_dir / finished_file_glob(signal)) for signal in signals)


def compress_context(
    otel_dir: PurePosixPath, signals: Iterable[str], max_backups: int, compresses: bool
) -> dict[str, object]:
    """The values of ``templates/_step/finished_files.sh.j2``, which defines
    ``_otel_collector_live_files`` (creates the live files), ``_otel_collector_compress_finished``
    (one pass over ``signals``' finished files in ``otel_dir``, keeping ``max_backups`` of them,
    0: all) and ``_otel_collector_compressing`` (a pass every ``COMPRESS_EVERY_SECONDS`` until
    TERM); where the step ``compresses`` nothing, the first two do nothing and the third is
    not defined."""
    signals = tuple(signals) if compresses else ()
    return {
        "finished_globs": [finished_file_glob(s) for s in signals],
        "live_files": [otel_dir / signal_file_name(s, compressed=False) for s in signals],
        "max_backups": max_backups,
        "compress_every": COMPRESS_EVERY_SECONDS,
        "zstd_suffix": ZSTD_SUFFIX,
        "part_suffix": PART_SUFFIX,
    }
