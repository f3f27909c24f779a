"""A memory cgroup of its own around the collector, as Slurm's ``task/cgroup`` bounds a step.

The disk queue's database is read through ``mmap``, so the collector's RSS also counts the
queue's pages it read: clean page cache, which the kernel reclaims only when memory is short.
Unbounded, a long backlog's readback shows 650-850 MiB of RSS. In a cgroup with a memory limit
(what a Slurm step gets under ``task/cgroup`` with ``ConstrainRAMSpace``) memory is short at the
limit, and the kernel reclaims page cache, those pages among it. The benchmarks put the
collector in such a bound to see whether it does its work there: everything delivered, no OOM
kill.

The collector's binary is page cache as well: its text, about 78 MiB resident, is charged to
whatever read the file first, and a bound does not reclaim pages charged elsewhere though RSS
counts them. A step that starts a binary no one on its node has read yet is charged for it; the
benchmarks start such a one from ``uncached_copy``.

Creating a cgroup needs root and either cgroup v1's memory controller or cgroup v2 with the
memory controller already enabled for the children of the benchmark's own cgroup (this does not
change the machine's cgroup setup); otherwise ``create`` says why, and the benchmark reports
that instead of a figure.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _own_cgroup(controller: str) -> str | None:
    """This process's cgroup path for ``controller`` ("" for the v2 hierarchy), if any."""
    for line in Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


def uncached_copy(binary: Path, folder: Path) -> Path:
    """A copy of ``binary`` in ``folder`` with none of its pages in the page cache: the first
    process to run it reads its text from disk and is charged for it. Written and synced, then
    dropped from the cache (clean pages nobody maps)."""
    copy = folder / binary.name
    shutil.copy2(binary, copy)
    fd = os.open(copy, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return copy


@dataclass(frozen=True)
class MemoryCgroup:
    path: Path
    v1: bool  # cgroup v1's memory controller, else v2
    limit_bytes: int

    @classmethod
    def create(cls, name: str, limit_bytes: int) -> MemoryCgroup:
        """A new child of this process's memory cgroup, limited to ``limit_bytes``; raises
        ``RuntimeError`` saying why where that cannot be done here."""
        v1_path = _own_cgroup("memory")
        if v1_path is not None:
            parent, v1 = CGROUP_ROOT / "memory" / v1_path.lstrip("/"), True
        else:
            v2_path = _own_cgroup("")
            if v2_path is None or not (CGROUP_ROOT / "cgroup.controllers").exists():
                raise RuntimeError("no memory cgroup controller on this machine")
            parent, v1 = CGROUP_ROOT / v2_path.lstrip("/"), False
            enabled = (parent / "cgroup.subtree_control").read_text().split()
            if "memory" not in enabled:
                raise RuntimeError(f"the memory controller is not enabled for {parent}'s children")
        path = parent / name
        try:
            path.mkdir()
            limit_file = "memory.limit_in_bytes" if v1 else "memory.max"
            (path / limit_file).write_text(str(limit_bytes))
        except OSError as error:
            if path.is_dir():  # made, but refused its limit
                path.rmdir()
            raise RuntimeError(f"cannot create a memory cgroup in {parent}: {error}") from None
        return cls(path, v1, limit_bytes)

    def command_prefix(self) -> tuple[str, ...]:
        """Runs first, joins the cgroup and execs the command after it (same pid), so that
        everything the collector allocates or reads is charged here from its first page."""
        return ("sh", "-c", 'echo $$ >"$0" && exec "$@"', str(self.path / "cgroup.procs"))

    def peak_bytes(self) -> int:
        """The most the cgroup was charged: the collector's memory and the page cache it read
        or wrote (its files, the queue's database)."""
        name = "memory.max_usage_in_bytes" if self.v1 else "memory.peak"
        return int((self.path / name).read_text())

    def oom_kills(self) -> int:
        text = (self.path / ("memory.oom_control" if self.v1 else "memory.events")).read_text()
        counts = dict(line.split() for line in text.splitlines())
        return int(counts.get("oom_kill", 0))

    def remove(self) -> None:
        """Once its process has exited (the kernel refuses before, and briefly after)."""
        deadline = time.monotonic() + 5
        while True:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
