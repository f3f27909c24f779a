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

import shlex
from collections.abc import Iterable
from pathlib import PurePosixPath

from .._common.constants import ZSTD_SUFFIX
from .._templating.file_compression import finished_file_glob, signal_file_name

COMPRESS_EVERY_SECONDS = 30
PART_SUFFIX = ".part"


def finished_file_globs(otel_dir: PurePosixPath, signals: Iterable[str]) -> tuple[str, ...]:
    """The names a rotation gives the files it finished, as globs."""
    return tuple(str(otel_dir / finished_file_glob(signal)) for signal in signals)


def _shell_glob(otel_dir: PurePosixPath, pattern: str) -> str:
    """``otel_dir``/``pattern`` for bash: everything quoted but the pattern's ``*``, so a job
    directory holding ``*`` (or quotes, ``$``) is only ever a literal path."""
    return f"{shlex.quote(str(otel_dir))}/" + "*".join(shlex.quote(p) for p in pattern.split("*"))


def compress_functions(otel_dir: PurePosixPath, signals: Iterable[str], max_backups: int) -> str:
    """The bash functions ``_otel_collector_live_files`` (creates the live files),
    ``_otel_collector_compress_finished`` (one pass over ``signals``' finished files in
    ``otel_dir``) and ``_otel_collector_compressing`` (a pass every ``COMPRESS_EVERY_SECONDS``
    until TERM) of the job step's fragment."""
    q = shlex.quote
    signals = tuple(signals)
    finished = " ".join(_shell_glob(otel_dir, finished_file_glob(s)) for s in signals)
    prune = (
        ""
        if max_backups == 0
        else "    keep_newest() {  # all but the newest $1 files after it go (globs sort by time)\n"
        "        local keep=$1\n"
        "        shift\n"
        '        (($# <= keep)) || rm -f -- "${@:1:$# - keep}"\n'
        "    }\n"
        + "".join(
            f"    keep_newest {max_backups} "
            f"{_shell_glob(otel_dir, finished_file_glob(signal) + ZSTD_SUFFIX)}\n"
            for signal in signals
        )
    )
    live = " ".join(q(str(otel_dir / signal_file_name(s, compressed=False))) for s in signals)
    return (
        "_otel_collector_live_files() {  # the exporters' files, opened only at the first item\n"
        "    local file\n"
        f"    for file in {live}; do\n"
        '        : >>"$file" || return 1\n'
        "    done\n"
        "}\n"
        "# Rotation's finished JSON-lines files, each compressed beside itself (see\n"
        "# _step/finished_files.py of nemo-gym-otel); needs the zstd command, else does nothing.\n"
        "_otel_collector_compress_finished() (\n"
        "    shopt -s nullglob\n"
        "    command -v zstd >/dev/null 2>&1 || exit 0\n"
        f"    local file zst={q(ZSTD_SUFFIX)} part={q(PART_SUFFIX)}\n"
        f"    for file in {finished}; do\n"
        '        zstd -q -f -o "$file$zst$part" -- "$file" &&\n'
        '            mv -f -- "$file$zst$part" "$file$zst" && rm -f -- "$file" || exit 1\n'
        "    done\n"
        f"{prune}"
        ")\n"
        "# In the background from the start until TERM: a wait, unlike a read, ends at the TERM;\n"
        "# then the pause is ended too (under set -e as well), so nothing holds the script's output.\n"
        "_otel_collector_compressing() {\n"
        "    local stop= pause\n"
        "    trap 'stop=1' TERM\n"
        '    while [[ -z "$stop" ]]; do\n'
        f"        _otel_collector_pause {COMPRESS_EVERY_SECONDS} &\n"
        "        pause=$!\n"
        '        wait "$pause" || :\n'
        '        kill "$pause" 2>/dev/null || :\n'
        '        [[ -n "$stop" ]] || _otel_collector_compress_finished || :\n'
        "    done\n"
        "}\n"
    )
