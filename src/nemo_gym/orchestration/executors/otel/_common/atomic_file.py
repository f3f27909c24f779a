"""Writing files so that each appears whole or not at all, and leaves nothing else behind.

Each file is first written as a temporary file in the destination folder and fsynced; only then
are the temporaries renamed over their targets, in the order given, and the folder is fsynced
once, so the renames survive a crash. Several files of one folder (a job's ``collector.yaml`` and
``drain.yaml``) cost one folder fsync together, and their temporaries are written and fsynced at
the same time, one on a thread of its own each: a journaling file system commits both fsyncs in
one go (about half the time of one after the other on ext4). The temporary file is created like
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
import threading
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
    """Write and fsync the temporaries at the same time: the first here, each other one on a
    thread of its own (a thread per call, not a pool: a pool's idle threads do not survive a
    fork of the caller). Every thread has ended when this returns or raises, so the caller's
    clean-up cannot race a thread still creating its file."""
    failures: list[BaseException] = []

    def write_on_thread(path: Path, text: str) -> None:
        try:
            _write_file(path, text)
        except BaseException as exc:  # handed to the caller's thread below
            failures.append(exc)

    threads: list[threading.Thread] = []
    try:
        for path, text in zip(temporaries[1:], texts[1:], strict=True):
            threads.append(threading.Thread(target=write_on_thread, args=(path, text)))
            threads[-1].start()
        _write_file(temporaries[0], texts[0])
    finally:
        for thread in threads:
            if thread.ident is not None:
                thread.join()
    if failures:
        raise failures[0]


def _write_file(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


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
