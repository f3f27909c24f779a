"""What a network file system costs the job directory: the local disk and sshfs side by side.

The same measurements as ``long_jobs`` and ``write``, once with the job directories in the
temporary directory (the local disk) and once on sshfs over loopback (``.ci/job-fs-up`` mounts
it; ``tests/support/job_fs.py`` reads where), one after the other in this run:

- **the disk queue's CPU**: the collector's cores at the large job's load (1x and 10x) with the
  backend's queue on disk against the same config with the queue in memory, the difference
  being the queue's (``long_jobs``' queue cost, on each file system); on sshfs also its
  client's cores (the FUSE daemon and its ssh), which do the collector's file work there;
- **fsync's CPU**: the disk queue syncing every write (``fsync: true``, an override) against
  the default, which does not;
- **a 10-s backlog**: 10 s of the load into a black hole, then the backend back: until the
  backend holds everything (the queue read back from the file system), per line;
- **the write of 500 jobs' configs**: ``write``'s submission with ``job.output_path`` there.

sshfs is not mounted on a machine that did not run ``.ci/job-fs-up``: the suite then measures
the local disk alone and says so in its first row. It is a benchmark, not a test: it asserts
nothing.
"""

from __future__ import annotations

import contextlib
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import psutil
from support.job_fs import mounted

from nemo_gym.orchestration.executors.otel import OTLP_HTTP_PORT

from ._stats import describe
from .collector_load import LINES, Generator, _log, collector_binary
from .long_jobs import (
    COST_LINE,
    HOST,
    QUEUE_VARIANTS,
    _backlog,
    _cost,
    override_dirs,
)
from .render import bulk_write

LOCAL = "local disk"
SSHFS = "sshfs"
NOT_MOUNTED = "sshfs is not mounted (run .ci/job-fs-up as root): the local disk alone"
FSYNC_VARIANT = "fsync"  # of long_jobs.GROWTH_OVERRIDES: the queue's storage syncs every write
# The disk queue syncing every write against the default, the rest of the combination the same.
FSYNC_NAMES = (FSYNC_VARIANT, "default")


def places(mounts: Mapping[str, Path], temporary: Path) -> dict[str, Path]:
    """Where the job directories go, by name: the local disk's temporary directory, and sshfs
    where it is mounted."""
    found = {LOCAL: temporary}
    if SSHFS in mounts:
        found[SSHFS] = mounts[SSHFS]
    return found


def side_by_side(values: Mapping[str, str]) -> str:
    """One row's figures, each named by its file system."""
    return "   ".join(f"{place}: {value}" for place, value in values.items())


def cost_figures(cost: Mapping[str, Any], first: str, second: str) -> dict[str, str]:
    """``_cost``'s result as one text per load factor: the first variant's cores less the
    second's, with both; the same for the file system's client where it was measured."""
    return {
        factor: _difference(c["cores"], first, second)
        + (
            f", its client {_difference(c['helper_cores'], first, second)}"
            if "helper_cores" in c
            else ""
        )
        + ("" if all(c["held"].values()) else " NOT HELD")
        for factor, c in cost.items()
    }


def _difference(cores: Mapping[str, float], first: str, second: str) -> str:
    return f"{cores[first] - cores[second]:+.3f} cores ({cores[first]:.3f} vs {cores[second]:.3f})"


def client_cpu(mount: Path) -> Callable[[], float] | None:
    """The CPU seconds so far of the sshfs client of ``mount`` (the FUSE daemon and the ssh
    process it talks through): on a node, the file system's work that the collector's own CPU
    figure leaves out. The sftp server's side is the file server's, not counted. None where
    no such process is found."""
    processes = []
    for process in psutil.process_iter(["name", "cmdline"]):
        args = process.info["cmdline"] or []
        if process.info["name"] == "sshfs" and str(mount) in args and "-p" in args:
            port = args[args.index("-p") + 1]
            processes.append(process)
            processes += [
                p
                for p in psutil.process_iter(["name", "cmdline"])
                if p.info["name"] == "ssh" and f"-oPort={port}" in (p.info["cmdline"] or [])
            ]
    if not processes:
        return None

    def spent() -> float:
        return sum(sum(p.cpu_times()[:2]) for p in processes)

    return spent


def rows(results: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The table's rows: one per figure, the file systems side by side."""
    measured = results["places"]
    found: list[tuple[str, str]] = [
        (
            "job directory on",
            side_by_side(measured) + ("" if SSHFS in measured else f"   ({NOT_MOUNTED})"),
        )
    ]
    by_place = results["by_place"]
    first = next(iter(by_place.values()))
    for factor in first["queue_cost"]:
        found.append(
            (
                f"disk queue's CPU, {factor} the large job ({COST_LINE}): disk - memory queue",
                side_by_side(
                    {
                        p: cost_figures(r["queue_cost"], *QUEUE_VARIANTS)[factor]
                        for p, r in by_place.items()
                    }
                ),
            )
        )
        found.append(
            (
                f"fsync's CPU, {factor} the large job ({COST_LINE}): fsync - default",
                side_by_side(
                    {
                        p: cost_figures(r["fsync_cost"], *FSYNC_NAMES)[factor]
                        for p, r in by_place.items()
                    }
                ),
            )
        )
    for line in first["backlogs"]:
        found.append(
            (
                f"10-s backlog at the backend after it came back ({line})",
                side_by_side(
                    {
                        p: f"{r['backlogs'][line]['drained_seconds']:.1f} s"
                        for p, r in by_place.items()
                    }
                ),
            )
        )
    found.append(
        (
            "500 jobs written (goal < 2 s)",
            side_by_side({p: describe(r["write"]["total"]) for p, r in by_place.items()}),
        )
    )
    return found


@contextlib.contextmanager
def _folder(parent: Path) -> Iterator[Path]:
    """A fresh folder of ``parent`` for one file system's job directories, removed after."""
    prefix = f"nemo-gym-otel-job-fs-{uuid.uuid4().hex[:6]}-"
    with tempfile.TemporaryDirectory(prefix=prefix, dir=parent) as folder:
        yield Path(folder)


def _measure(parent: Path, quick: bool, helper_cpu: Callable[[], float] | None) -> dict[str, Any]:
    binaries = {line: collector_binary(line) for line in LINES}
    generator = Generator(f"http://{HOST}:{OTLP_HTTP_PORT}")
    with _folder(parent) as folder, override_dirs(COST_LINE, FSYNC_VARIANT) as fsync_dirs:
        try:
            queue_cost = _cost(
                binaries[COST_LINE],
                generator,
                quick,
                QUEUE_VARIANTS,
                parent=folder,
                helper_cpu=helper_cpu,
            )
            fsync_cost = _cost(
                binaries[COST_LINE],
                generator,
                quick,
                dict(zip(FSYNC_NAMES, (({}, fsync_dirs), ({}, None)), strict=True)),
                parent=folder,
                helper_cpu=helper_cpu,
            )
        finally:
            generator.close()
        backlogs = {
            line: _backlog(binary, line, parent=folder) for line, binary in binaries.items()
        }
        write = bulk_write(500, 3 if quick else 5, parent=folder)
    return {
        "queue_cost": queue_cost,
        "fsync_cost": fsync_cost,
        "backlogs": backlogs,
        "write": write,
    }


def job_fs(quick: bool) -> dict[str, Any]:
    where = places(mounted(), Path(tempfile.gettempdir()))
    if SSHFS not in where:
        _log(NOT_MOUNTED)
    by_place = {}
    for name, parent in where.items():
        _log(f"job directories on the {name} ({parent})")
        by_place[name] = _measure(parent, quick, client_cpu(parent) if name == SSHFS else None)
    results = {"places": {name: str(path) for name, path in where.items()}, "by_place": by_place}
    results["rows"] = rows(results)
    return results
