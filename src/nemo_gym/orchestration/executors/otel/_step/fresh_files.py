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

from collections.abc import Iterable
from pathlib import PurePosixPath

from .._common.constants import ZSTD_SUFFIX

RESTART_REASON = "restart"


def set_aside_context(paths: Iterable[PurePosixPath]) -> dict[str, object]:
    """The values of ``templates/_step/fresh_files.sh.j2``, which defines
    ``_otel_collector_set_aside``: it renames the non-empty zstd files among ``paths``, with
    bash's own clock (no coreutils but ``mv``)."""
    return {
        "zstd_files": [p for p in paths if p.name.endswith(ZSTD_SUFFIX)],
        "zstd_suffix": ZSTD_SUFFIX,
        "restart_suffix": f"-{RESTART_REASON}{ZSTD_SUFFIX}",
    }
