"""Reading a file the user named: a regular UTF-8 file, or one readable error naming it.

``/dev/zero``, a FIFO or a terminal would never end (or never answer): only regular files are
read, and the check is made on the opened file, so it cannot change in between. The file is
opened without blocking, so a FIFO nobody writes to is refused too instead of waited on.
Files of any size are read a line at a time by :func:`bounded_lines`, which never holds more
than one line of at most a given length.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from typing import IO

from .errors import OtelConfigError

_KINDS = {
    stat.S_ISDIR: "a directory",
    stat.S_ISFIFO: "a FIFO",
    stat.S_ISCHR: "a device",
    stat.S_ISBLK: "a device",
    stat.S_ISSOCK: "a socket",
}
_CHUNK = 1 << 20


def open_regular(
    path: str, error: Callable[[str, str], OtelConfigError], fix: str = "name a YAML file"
) -> IO[bytes]:
    """``path`` opened for reading. A missing file raises :class:`FileNotFoundError` (the
    caller says what its absence means); one that is not a regular file or cannot be opened
    raises ``error(path, message)``, ``fix`` saying what to do about the first."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise error(path, f"cannot read the file ({exc.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS.items() if test(mode)), "not a file")
            raise error(path, f"is not a regular file ({kind}); {fix}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text_file(
    path: str, error: Callable[[str, str], OtelConfigError], fix: str = "name a YAML file"
) -> str:
    """The text of ``path``; anything else raises ``error(path, message)``."""
    try:
        with open_regular(path, error, fix) as handle:
            data = handle.read()
    except OSError as exc:
        raise error(path, f"cannot read the file ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(path, "is not UTF-8 text") from None


def bounded_lines(stream: IO[bytes], limit: int) -> Iterator[bytes | None]:
    """The lines of ``stream`` (each with its line break; the last one without, when the
    stream does not end with one), read in chunks: ``None`` stands for a line longer than
    ``limit`` bytes, which is skipped unread rather than held whole."""
    held: list[bytes] = []  # the start of the current line, from earlier chunks
    size = 0
    skipping = False  # inside a line already found too long
    while chunk := stream.read(_CHUNK):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if skipping:
                skipping = False
            elif size + end + 1 - start > limit:
                yield None
            else:
                yield b"".join([*held, chunk[start : end + 1]])
            held, size, start = [], 0, end + 1
        if not skipping and start < len(chunk):
            held.append(chunk[start:])
            size += len(chunk) - start
            if size > limit:
                held, size, skipping = [], 0, True
                yield None
    if held:
        yield b"".join(held)
