"""Running a command under a ceiling of time and memory, and measuring what it used.

A hostile input must be answered within 2 s and 200 MB (issue 10). Tests do not time things
(speed belongs in the benchmarks), but they do hold each run to limits far above normal, so a
regression to the old behaviour (22 s and 1.3 GB for 800 bytes) fails instead of passing
slowly: the child gets an address-space rlimit (it fails rather than take the machine), and its
own peak RSS and CPU time are read from ``wait4``, which reports that one child alone.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Far above what a refusal costs (under 0.5 s of CPU and 80 MB here), far below the old cost.
CPU_SECONDS_LIMIT = 10.0
PEAK_MB_LIMIT = 400
_ADDRESS_SPACE = 4 * 1024**3  # the child cannot take more than this, whatever happens
# A file to which every bounded run appends its figures as a JSON line: how the worst input of
# each class is found for docs/guide/errors.md (the tests only hold the limits above).
RECORD_ENV = "NEMO_GYM_OTEL_BOUNDED_RECORD"


@dataclass(frozen=True)
class Bounded:
    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float
    wall_seconds: float
    peak_mb: float


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_ADDRESS_SPACE, _ADDRESS_SPACE))


def run_bounded(
    args: Sequence[str | os.PathLike[str]], *, cwd: Path, env: dict[str, str], timeout: float = 120
) -> Bounded:
    """Run ``args``; its CPU time and peak RSS come from the kernel's accounting of it (so the
    child is reaped here with ``wait4``, its output going through temporary files)."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(
            [str(a) for a in args], cwd=cwd, env=env, stdout=out, stderr=err, preexec_fn=_limit
        )
        timer = threading.Timer(timeout, child.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    result = Bounded(
        returncode=child.returncode,
        stdout=stdout,
        stderr=stderr,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        wall_seconds=time.monotonic() - start,
        peak_mb=usage.ru_maxrss / 1024,
    )
    if os.environ.get(RECORD_ENV):
        figures = {"args": [str(a) for a in args], "cpu_seconds": result.cpu_seconds}
        figures |= {"wall_seconds": result.wall_seconds, "peak_mb": result.peak_mb}
        with open(os.environ[RECORD_ENV], "a", encoding="utf-8") as record:
            record.write(json.dumps(figures) + "\n")
    return result


def assert_within_bounds(result: Bounded) -> None:
    assert result.cpu_seconds < CPU_SECONDS_LIMIT, f"{result.cpu_seconds:.1f} s of CPU"
    assert result.peak_mb < PEAK_MB_LIMIT, f"peak RSS {result.peak_mb:.0f} MB"
