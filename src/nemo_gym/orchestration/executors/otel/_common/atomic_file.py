"""Writing files so that each appears whole or not at all, and leaves nothing else behind.

Each file is first written as a temporary file in the destination folder and fsynced; only then
are the temporaries renamed over their targets, in the order given, and the folder is fsynced
once, so the renames survive a crash. Several files of one folder (a job's ``collector.yaml`` and
the files cut from it) cost one folder fsync together, and their temporaries are all written,
with the disk's write-back of each started at once, before the first of their fsyncs waits: a
journaling file system commits them in one go (on ext4 about half the time of one file after
the other, docs/maintainers/performance.md). The temporary file is created like
any new file (mode 0666 less the umask), so the result gets the permissions the user's umask
gives. The folders the write had to create, and the targets it renamed into place, are removed
again when anything fails (an exception, or SIGTERM turned into one by the CLI), so a failure
leaves nothing of the write behind; a folder someone else made meanwhile is not ours to remove.

What a crash (power loss) may leave: a renamed target always holds its whole new text, since its
data was fsynced before the rename. Until the folder fsync returns, a crash may keep any of the
renames and lose the others (POSIX promises no order among renames not yet fsynced): each
target on its own is whole, old or new, but several targets may be a mix of old and new. When
the files must agree, the reader has to be able to tell (``_render/job_files.py`` marks its
pair). Once the write returns, all of it is on disk. The folders it created are made durable by
the same folder fsync on a journaling file system (ext4 and XFS commit the ``mkdir`` in the same
or an earlier transaction; NFS makes a ``mkdir`` durable before it answers).

A process killed outright (SIGKILL) cannot clean up. Its temporary files are named
``.<target>.<host>.<pid>.<random>.tmp``, so the next write into the same folder recognises them
as stale (same host and user, process gone) and removes them; temporaries of live processes, of
other hosts (a shared file system) and of other users are left alone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from collections.abc import Sequence
from pathlib import Path

_SUFFIX = ".tmp"


def write_atomically(target: Path, text: str) -> None:
    write_together(target.parent, [(target.name, text)])


def write_together(
    folder: Path, files: Sequence[tuple[str, str]], removed: Sequence[str] = ()
) -> None:
    """Write each ``(name, text)`` of ``files`` into ``folder`` atomically: unlink ``removed``
    first, then rename the written files into place in the order given, then fsync the folder
    once (see the module's docstring for what a crash can leave)."""
    missing = []  # deepest first, up to the first folder that exists
    parent = folder
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    created: list[Path] = []
    temporaries: list[Path] = []
    placed: list[Path] = []
    try:
        for new in reversed(missing):
            created.append(new)  # before mkdir: a signal in between must not leave it behind
            try:
                new.mkdir()
            except FileExistsError:
                created.pop()
                if not new.is_dir():
                    raise
        if not missing:  # a folder made just now holds nothing stale
            _remove_stale_temporaries(folder, [name for name, _ in files])
        temporaries = [folder / _temporary_name(name, os.getpid()) for name, _ in files]
        _write_all(temporaries, [text for _, text in files])
        for name in removed:
            (folder / name).unlink(missing_ok=True)
        for temporary, (name, _) in zip(temporaries, files, strict=True):
            os.replace(temporary, folder / name)
            placed.append(folder / name)
        _fsync_folder(folder)
    except BaseException:
        for path in [*temporaries, *placed]:
            path.unlink(missing_ok=True)
        for new in reversed(created):
            _remove_if_empty(new)
        raise


def _write_all(temporaries: Sequence[Path], texts: Sequence[str]) -> None:
    """Write every temporary and start the disk on it, then fsync each: the write-back of all
    of them is under way before the first fsync waits, so a journaling file system commits
    them together, and the later fsyncs find their data on disk already. No thread is started
    (a started thread waits to be scheduled: about 0.4 ms each on a busy 2-CPU machine, as
    much as the commit itself). Every temporary is closed when this returns or raises."""
    handles: list[int] = []
    try:
        for path, text in zip(temporaries, texts, strict=True):
            handles.append(
                os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            )
            _write_whole(handles[-1], text.encode("utf-8"))
            _start_write_back(handles[-1])
        for handle in handles:
            os.fsync(handle)
    finally:
        for handle in handles:
            os.close(handle)


def _write_whole(handle: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view) :]


def _start_write_back(handle: int) -> None:
    """Ask the kernel to write the file's data now, without waiting (Linux's
    ``POSIX_FADV_DONTNEED`` starts the write-back of dirty pages); only a hint: the fsync after
    it is what makes the data durable, here or where the hint does nothing."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is not None:
        with contextlib.suppress(OSError):
            advise(handle, 0, 0, os.POSIX_FADV_DONTNEED)


def _prefix(name: str) -> str:
    return f".{name}."


def _temporary_name(name: str, pid: int) -> str:
    return f"{_prefix(name)}{socket.gethostname()}.{pid}.{secrets.token_hex(4)}{_SUFFIX}"


def _remove_stale_temporaries(folder: Path, names: Sequence[str]) -> None:
    """One look at the folder for the temporaries of every target name."""
    host, uid = socket.gethostname(), os.getuid()
    prefixes = tuple(_prefix(name) for name in names)
    for entry in folder.iterdir():
        name = entry.name
        if not (name.startswith(prefixes) and name.endswith(_SUFFIX)):
            continue
        prefix = next(p for p in prefixes if name.startswith(p))
        parts = name[len(prefix) : -len(_SUFFIX)].rsplit(".", 2)
        if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
            continue
        with contextlib.suppress(OSError):
            if entry.lstat().st_uid == uid and not _alive(int(parts[1])):
                entry.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()
