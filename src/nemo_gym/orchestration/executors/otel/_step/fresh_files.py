"""Each collector process of a job starts zstd files of its own.

A zstd stream that ends inside a frame (the collector SIGKILLed, or its node lost, between two
of its once-a-second flushes) makes everything appended after it unreadable: ``zstd``,
``zstdcat`` and the report's reader stop at the cut. So the job step's start, before it starts
the collector in a job directory that already holds compressed signal files (a requeue), renames
them ``<signal>.jsonl-<UTC time>-restart.zst``, beside rotation's renamed files: the report and
``zstdcat <signal>.jsonl*.zst`` read them in order. Only the start needs it: the stop runs the
drain only after the collector exited by itself, its streams finished, and ``nemo-gym-otel
drain`` writes nothing to the job's files. JSON lines (the legacy line) are appended to as
before: a cut line costs itself and the first line the next attempt appends to it, and every
line after reads.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import PurePosixPath

from .._common.constants import ZSTD_SUFFIX

RESTART_REASON = "restart"


def set_aside_function(paths: Iterable[PurePosixPath]) -> str:
    """The bash function ``_otel_collector_set_aside`` of the job step's fragment, renaming the
    non-empty zstd files among ``paths``, with bash's own clock (no coreutils but ``mv``)."""
    files = " ".join(shlex.quote(str(p)) for p in paths if p.name.endswith(ZSTD_SUFFIX))
    if not files:
        return "_otel_collector_set_aside() { :; }  # the collector writes no zstd files\n"
    suffix = shlex.quote(f"-{RESTART_REASON}{ZSTD_SUFFIX}")
    return (
        "# A requeue's zstd files, renamed so that this collector's streams start files of their\n"
        "# own: appended after a stream a killed collector cut, they would be unreadable.\n"
        "_otel_collector_set_aside() {\n"
        "    local file stamp now=${EPOCHREALTIME/[.,]/}\n"
        "    TZ=UTC printf -v stamp '%(%Y-%m-%dT%H-%M-%S)T' \"${now:0:-6}\"\n"
        f"    for file in {files}; do\n"
        '        if [[ -s "$file" ]]; then\n'
        f'            mv -f -- "$file" "${{file%{ZSTD_SUFFIX}}}-$stamp.${{now:(-6):3}}"{suffix} || return 1\n'
        "        fi\n"
        "    done\n"
        "}\n"
    )
