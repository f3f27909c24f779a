"""What a power loss during ``write_collector_config`` can leave, and that the step's start
refuses every state that is not a pair written together.

The write runs for real; a recorder notes each call of it that changes a folder or makes
something durable (a file created, renamed, unlinked, a folder made or removed, an fsync) and
replays them on a model of what a crash keeps, the worst POSIX allows: a file's data only once
it was fsynced (else it is empty), a change to a folder's entries only once that folder was
fsynced, and of the changes not yet fsynced any subset, in any mix across folders. For a crash
after every call, every such state must hold each of ``collector.yaml`` and ``drain.yaml``
whole (absent, as before, or as written), and the start's check (``CollectorStep.files_mark``,
written out in :func:`start_accepts`) must refuse it unless the two are one rendering's pair.
After the write returned, the job's files must be the new pair whatever else is lost.
"""

from __future__ import annotations

import itertools
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import write_collector_config
from nemo_gym.orchestration.executors.otel._render.job_files import (
    FILES_MARK,
    WITH_DRAIN,
    WITHOUT_DRAIN,
)

Pathish = str | os.PathLike[str]
Files = tuple[str | None, str | None]  # collector.yaml's text and drain.yaml's (None: absent)


def start_accepts(collector: str | None, drain: str | None) -> bool:
    """The start's check: ``collector.yaml``'s last line names its ``drain.yaml`` (whose last
    line must be the same) or says there is none (then there must be none)."""
    if collector is None:
        return False
    last = (collector.splitlines() or [""])[-1]
    if not last.startswith(FILES_MARK):
        return False
    if last.endswith(WITH_DRAIN):
        return drain is not None and (drain.splitlines() or [""])[-1] == last
    return last.endswith(WITHOUT_DRAIN) and drain is None


@dataclass
class Recorder:
    """The calls that change folders or make something durable, in the order they ran."""

    events: list[tuple] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, *event: object) -> None:
        with self.lock:
            self.events.append(event)


def _split(path: Pathish) -> tuple[str, str]:
    absolute = os.path.abspath(os.fspath(path))
    return os.path.dirname(absolute), os.path.basename(absolute)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    record = Recorder()
    real = {name: getattr(os, name) for name in ("open", "fsync", "replace", "unlink", "mkdir")}
    real["rmdir"] = os.rmdir

    def open_(path: Pathish, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        existed = os.path.lexists(path)
        fd = real["open"](path, flags, mode, dir_fd=dir_fd)
        if flags & os.O_CREAT and not existed:
            record.note("link", *_split(path), os.fstat(fd).st_ino)
        return fd

    def fsync(fd: int) -> None:
        real["fsync"](fd)
        status = os.fstat(fd)
        where = os.readlink(f"/proc/self/fd/{fd}")
        if stat.S_ISDIR(status.st_mode):
            record.note("commit", where)
        else:
            with open(where, encoding="utf-8") as handle:
                record.note("data", status.st_ino, handle.read())

    def replace(source: Pathish, target: Pathish) -> None:
        real["replace"](source, target)
        folder, old = _split(source)
        record.note("rename", folder, old, _split(target)[1])

    def unlink(path: Pathish, *, dir_fd: int | None = None) -> None:
        real["unlink"](path, dir_fd=dir_fd)
        record.note("unlink", *_split(path))

    def mkdir(path: Pathish, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real["mkdir"](path, mode, dir_fd=dir_fd)
        record.note("link", *_split(path), os.stat(path).st_ino)

    def rmdir(path: Pathish, *, dir_fd: int | None = None) -> None:
        real["rmdir"](path, dir_fd=dir_fd)
        record.note("unlink", *_split(path))

    for name, wrapper in (
        ("open", open_),
        ("fsync", fsync),
        ("replace", replace),
        ("unlink", unlink),
        ("mkdir", mkdir),
        ("rmdir", rmdir),
    ):
        monkeypatch.setattr(os, name, wrapper)
    yield record


@dataclass
class Disk:
    """What survives: each folder's entries (name -> inode) and each inode's fsynced text."""

    entries: dict[str, dict[str, int]]
    data: dict[int, str]

    def apply(self, event: tuple) -> None:
        kind, folder = event[0], event[1]
        names = self.entries.setdefault(folder, {})
        if kind == "link":
            names[event[2]] = event[3]
        elif kind == "rename":
            if event[2] in names:
                names[event[3]] = names.pop(event[2])
        elif kind == "unlink":
            names.pop(event[2], None)

    def read(self, path: Path) -> str | None:
        """The file's text if every folder on its way survived, else None."""
        folder = str(path.parent)
        while folder not in self.entries and folder != "/":  # above the model: as it was
            folder = os.path.dirname(folder)
        parts = path.relative_to(folder).parts
        for part in parts[:-1]:
            inode = self.entries.get(folder, {}).get(part)
            if inode is None:
                return None
            folder = os.path.join(folder, part)
        inode = self.entries.get(folder, {}).get(parts[-1])
        return None if inode is None else self.data.get(inode, "")


def crash_states(before: Disk, events: list[tuple]) -> Iterator[Disk]:
    """Every disk a crash right after ``events`` can leave, from ``before``."""
    durable = Disk({k: dict(v) for k, v in before.entries.items()}, dict(before.data))
    pending: list[tuple] = []
    for event in events:
        if event[0] == "data":
            durable.data[event[1]] = event[2]
        elif event[0] == "commit":
            for change in [e for e in pending if e[1] == event[1]]:
                durable.apply(change)
            pending = [e for e in pending if e[1] != event[1]]
        else:
            pending.append(event)
    for kept in itertools.product((False, True), repeat=len(pending)):
        disk = Disk({k: dict(v) for k, v in durable.entries.items()}, dict(durable.data))
        for change, keep in zip(pending, kept, strict=True):
            if keep:
                disk.apply(change)
        yield disk


def _snapshot(root: Path) -> Disk:
    disk = Disk({}, {})
    for folder, folders, files in os.walk(root):
        disk.entries[folder] = {n: os.stat(os.path.join(folder, n)).st_ino for n in folders}
        for name in files:
            path = os.path.join(folder, name)
            disk.entries[folder][name] = os.stat(path).st_ino
            disk.data[os.stat(path).st_ino] = Path(path).read_text(encoding="utf-8")
    return disk


def _config(mapping: dict, queue_megabytes: int | None, interval: int) -> SubmitConfig:
    otel = {**mapping["otel"], "backend_queue_megabytes": queue_megabytes}
    otel["scrape_interval_seconds"] = interval
    return SubmitConfig.from_dict({**mapping, "otel": otel})


def _files(job_dir: Path) -> Files:
    otel = job_dir / "otel"
    return tuple(  # type: ignore[return-value]
        (otel / name).read_text(encoding="utf-8") if (otel / name).exists() else None
        for name in ("collector.yaml", "drain.yaml")
    )


# (earlier rendering or None, the new one): queue size in MiB (None: in memory, no drain.yaml)
# and scrape interval, so that both files of the two renderings differ.
CASES = {
    "fresh job directory": (None, (1024, 15)),
    "a pair replaced by another": ((1024, 15), (2048, 10)),
    "a pair replaced by collector.yaml alone": ((1024, 15), (None, 10)),
    "collector.yaml alone replaced by a pair": ((None, 15), (2048, 10)),
    "a pair written again unchanged": ((1024, 15), (1024, 15)),
}


@pytest.mark.parametrize("case", CASES)
def test_every_crash_state_is_refused_by_the_start_or_is_a_pair(
    tmp_path: Path, example_mapping: dict, recorder: Recorder, case: str
) -> None:
    earlier, new = CASES[case]
    example_mapping["job"]["output_path"] = str(tmp_path / "runs")
    job_dir = tmp_path / "runs" / "gym-1" / "aime25"
    if earlier is not None:
        write_collector_config(_config(example_mapping, *earlier), "aime25", job_dir)
    old = _files(job_dir)
    before = _snapshot(tmp_path)
    recorder.events.clear()

    write_collector_config(_config(example_mapping, *new), "aime25", job_dir)

    written = _files(job_dir)
    assert start_accepts(*written), "the start refuses what the write wrote"
    assert earlier is None or old == written or not start_accepts(old[0], written[1])
    pairs = {old, written} if start_accepts(*old) else {written}
    collector, drain = job_dir / "otel" / "collector.yaml", job_dir / "otel" / "drain.yaml"
    accepted_after_return = True
    for count in range(len(recorder.events) + 1):
        for disk in crash_states(before, recorder.events[:count]):
            state = (disk.read(collector), disk.read(drain))
            assert state[0] in (None, old[0], written[0]), "collector.yaml not whole"
            assert state[1] in (None, old[1], written[1]), "drain.yaml not whole"
            if start_accepts(*state):
                assert state in pairs, f"the start accepts a mix after {count} calls"
            if count == len(recorder.events) and earlier is not None:
                accepted_after_return &= state == written
    assert accepted_after_return, "what the write returned after is not all on disk"


def test_a_crash_state_the_check_must_refuse_exists(
    tmp_path: Path, example_mapping: dict, recorder: Recorder
) -> None:
    """The model is not vacuous: some crash during a replacement leaves a mixed pair."""
    example_mapping["job"]["output_path"] = str(tmp_path / "runs")
    job_dir = tmp_path / "runs" / "gym-1" / "aime25"
    write_collector_config(_config(example_mapping, 1024, 15), "aime25", job_dir)
    old, before = _files(job_dir), _snapshot(tmp_path)
    recorder.events.clear()
    write_collector_config(_config(example_mapping, 2048, 10), "aime25", job_dir)
    written = _files(job_dir)
    otel = job_dir / "otel"
    states = {
        (disk.read(otel / "collector.yaml"), disk.read(otel / "drain.yaml"))
        for count in range(len(recorder.events) + 1)
        for disk in crash_states(before, recorder.events[:count])
    }
    assert (written[0], old[1]) in states and (old[0], written[1]) in states
