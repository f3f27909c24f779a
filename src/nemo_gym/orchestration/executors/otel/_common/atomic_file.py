"""Writing a file so that it appears whole or not at all, and leaves nothing else behind.

A temporary file in the destination folder is written, fsynced and renamed over the target, and
the folder is fsynced so the rename survives a crash. The temporary file is created like any new
file (mode 0666 less the umask), so the result gets the permissions the user's umask gives.
The folders the write had to create are removed again when anything fails (an exception, or
SIGTERM turned into one by the CLI), so a failure leaves nothing behind; a folder someone else
made meanwhile is not ours to remove.

A process killed outright (SIGKILL) cannot clean up. Its temporary file is named
``.<target>.<host>.<pid>.<random>.tmp``, so the next write into the same folder recognises it
as stale (same host and user, process gone) and removes it; temporaries of live processes, of
other hosts (a shared file system) and of other users are left alone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from pathlib import Path

_SUFFIX = ".tmp"


def write_atomically(target: Path, text: str) -> None:
    missing = []  # deepest first, up to the first folder that exists
    folder = target.parent
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    created: list[Path] = []
    temporary: Path | None = None
    try:
        for folder in reversed(missing):
            created.append(folder)  # before mkdir: a signal in between must not leave it behind
            try:
                folder.mkdir()
            except FileExistsError:
                created.pop()
                if not folder.is_dir():
                    raise
        if not missing:  # a folder made just now holds nothing stale
            _remove_stale_temporaries(target)
        temporary = target.parent / _temporary_name(target, os.getpid())
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
        temporary = None
        _fsync_folder(target.parent)
    except BaseException:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        for folder in reversed(created):
            _remove_if_empty(folder)
        raise


def _prefix(target: Path) -> str:
    return f".{target.name}."


def _temporary_name(target: Path, pid: int) -> str:
    return f"{_prefix(target)}{socket.gethostname()}.{pid}.{secrets.token_hex(4)}{_SUFFIX}"


def _remove_stale_temporaries(target: Path) -> None:
    host, uid = socket.gethostname(), os.getuid()
    for entry in target.parent.iterdir():
        name = entry.name
        if not (name.startswith(_prefix(target)) and name.endswith(_SUFFIX)):
            continue
        parts = name[len(_prefix(target)) : -len(_SUFFIX)].rsplit(".", 2)
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
