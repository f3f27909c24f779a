"""``collector.log`` within a bound: its first part and its newest lines, the middle dropped.

The collector logs at its own pace: one line per failed attempt and per refused batch, so a long
outage or a full disk writes megabytes, and a debug exporter a platform team adds writes every
item. ``srun`` writes what the step's processes print, and a file size limit on ``srun`` would end
it (SIGXFSZ); the collector's own file size limit (the disk budget's, see :mod:`.disk_budget`)
does not reach a file it does not write. So the step's start puts a writer of its own between
them (``templates/_step/bounded_log.sh.j2``): the ``srun`` of the collector and of its sender
(and at the stop, the drain's) print into a pipe whose reader, a bash function of the batch
shell, copies it with coreutils (``head -c``, ``tee``) in blocks, never a byte at a time:

- ``collector.log`` takes the log's first ``head`` bytes: the start's lines, the collector's
  start and the first errors, which tell why the rest happened;
- then the newest lines go to ``collector.log.tail``; when it holds ``chunk`` bytes it becomes
  ``collector.log.tail.old`` (replacing the one before) and a new tail begins. Each tail begins
  with a line (``TAIL_NOTE_PREFIX``) saying how many bytes of the log came between the end of
  ``collector.log`` and it: the older tail's figure is what was dropped.

So the log takes at most ``head + 2 * chunk`` bytes, plus the tails' notes and the step's own
lines: half and a quarter of its bound, the smaller of ``LOG_MAX_BYTES`` and the disk budget's
share per file. Read in order (``log_parts``), the three files are the log with its middle cut
out; ``report`` counts what was cut. What a full file system refuses is neither written nor
counted there.

The writer ignores TERM: it ends when the processes whose output it copies have all closed the
pipe, never before them (a reader gone would fail their next write). The batch shell holds the
pipe's other end only while the start runs: a job's service started after the start would
otherwise hold it too (bash opens it without close-on-exec), and the stop, which waits for the
writer to have written everything before it reads the log, would wait for that service. So the
step's own lines go through the pipe while the start runs (in order with the collector's), and
are appended to the newest file after it.
"""

from __future__ import annotations

import re
from pathlib import PurePath, PurePosixPath
from typing import TypeVar

from .._common.constants import COLLECTOR_LOG_OLDER_SUFFIX, COLLECTOR_LOG_TAIL_SUFFIX

# The bound of collector.log with its two tails, where the disk budget's share per file is not
# smaller: 8 MiB of the log's beginning (hundreds of thousands of lines of a start) and at least
# the newest 4 MiB (an outage's last thousands of retries, and the stop).
LOG_MAX_BYTES = 16 * 1024 * 1024
# The first line of each tail file; the number after it is how many bytes of the log came
# between the end of collector.log and the tail.
TAIL_NOTE_PREFIX = "nemo-gym-otel: the log goes on here, "
_TAIL_NOTE = re.compile(re.escape(TAIL_NOTE_PREFIX) + r"([0-9]+) bytes")
_Path = TypeVar("_Path", bound=PurePath)


def log_parts(log: _Path) -> tuple[_Path, _Path, _Path]:
    """The files of the log whose first part is ``log``, in the log's order: the step's names
    (on the node) and the files ``report`` reads (here)."""
    return (
        log,
        log.with_name(log.name + COLLECTOR_LOG_OLDER_SUFFIX),
        log.with_name(log.name + COLLECTOR_LOG_TAIL_SUFFIX),
    )


def dropped_bytes(older_first_line: str) -> int:
    """How many bytes of the log the writer dropped, from the first line of the older tail."""
    found = _TAIL_NOTE.match(older_first_line)
    return int(found.group(1)) if found else 0


def bounded_log_context(log: PurePosixPath) -> dict[str, object]:
    """The values of ``templates/_step/bounded_log.sh.j2``."""
    _, older, tail = log_parts(log)
    return {
        "bounded_log": {
            "older": older,
            "tail": tail,
            "max_bytes": LOG_MAX_BYTES,
            "note": TAIL_NOTE_PREFIX,
        }
    }
