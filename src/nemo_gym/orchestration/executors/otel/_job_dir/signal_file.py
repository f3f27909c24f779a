"""A signal file's lines, whether the collector wrote JSON lines or a zstd stream of them.

Python reads zstd itself only from 3.14 (``compression.zstd``). Before that the ``zstd``
command decompresses: every common distribution packages it, it is what the README's
``zstdcat | jq`` uses, and so reading the job's files needs no library beyond the run-time three.
Progress is counted in the file's own bytes, the unit of the progress bar's total: the child
reads through the same open file, so its offset is ours to read.

Whatever the files hold, the report's memory stays bounded: only regular files are opened
(:func:`.._common.text_file.open_regular`: a FIFO, a device or a directory is refused unread),
and lines are read in chunks, one at most ``LINE_LIMIT_BYTES`` long (the collector writes one
batch per line: megabytes at most); a longer one is skipped and reported.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from .._common.constants import ZSTD_SUFFIX
from .._common.errors import JobDirError
from .._common.text_file import bounded_lines, open_regular

Progress = Callable[[int], None]  # called with the bytes read since the last call
LINE_LIMIT_BYTES = 64 * 1024 * 1024
LINE_LIMIT_TEXT = "64 MiB"
# Every zstd frame starts with its magic number; a skippable frame with one of 16 others.
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_SKIPPABLE_MAGIC_LOW = range(0x50, 0x60)
_SKIPPABLE_MAGIC_HIGH = b"\x2a\x4d\x18"
REPLACE_IT = "put back the file the job wrote there, or remove it"


def open_job_file(path: Path) -> IO[bytes]:
    """A file of the job directory opened for reading; :class:`FileNotFoundError` when it is
    missing, :class:`JobDirError` naming it when it is not a regular file or cannot be read."""
    return open_regular(str(path), JobDirError, REPLACE_IT)


def _zstd_start(head: bytes) -> bool:
    return head[:4] == _ZSTD_MAGIC or (
        head[0:1] != b"" and head[0] in _SKIPPABLE_MAGIC_LOW and head[1:4] == _SKIPPABLE_MAGIC_HIGH
    )


class ZstdUnavailable(Exception):
    """Neither ``compression.zstd`` nor the ``zstd`` command is here to read a ``.zst`` file."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path.name} is zstd-compressed and this machine cannot read it: install the zstd "
            "command (apt-get install zstd, dnf install zstd) or use Python 3.14+"
        )


class SignalFile:
    """One file of a signal, read once in a stream by :meth:`lines`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # A zstd stream that ends inside a frame: the collector was killed between two of its
        # once-a-second flushes. What was written of it is read; what it still held is lost.
        self.cut_short = False
        self.not_zstd = False  # a .zst file that does not start as a zstd stream: not read

    def lines(self, progress: Progress | None = None) -> Iterator[bytes | None]:
        """The file's lines; ``None`` for one longer than ``LINE_LIMIT_BYTES``, not read."""
        with open_job_file(self.path) as raw:
            offset = _Offset(raw, progress)
            if self.path.suffix != ZSTD_SUFFIX:
                for line in bounded_lines(raw, LINE_LIMIT_BYTES):
                    offset.advance()
                    yield line
                offset.advance()
            elif os.fstat(raw.fileno()).st_size:  # an empty file is no stream (zstd says so)
                if _zstd_start(os.pread(raw.fileno(), 4, 0)):
                    yield from self._decompressed(raw, offset)
                else:
                    self.not_zstd = True

    def _decompressed(self, raw: IO[bytes], offset: _Offset) -> Iterator[bytes | None]:
        try:
            from compression import zstd  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            yield from self._through_command(raw, offset)
            return
        try:
            for line in bounded_lines(zstd.ZstdFile(raw), LINE_LIMIT_BYTES):
                offset.advance()
                yield line
        except (EOFError, zstd.ZstdError):
            self.cut_short = True
        offset.advance()

    def _through_command(self, raw: IO[bytes], offset: _Offset) -> Iterator[bytes | None]:
        try:
            child = subprocess.Popen(
                ["zstd", "-dcq"], stdin=raw, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
        except FileNotFoundError:
            raise ZstdUnavailable(self.path) from None
        with child:
            assert child.stdout is not None
            for line in bounded_lines(child.stdout, LINE_LIMIT_BYTES):
                offset.advance()
                yield line
        offset.advance()
        self.cut_short = child.returncode != 0


class _Offset:
    """How far into a file its reader (this process or a child sharing the open file) is."""

    def __init__(self, raw: IO[bytes], progress: Progress | None) -> None:
        self._fd = raw.fileno()
        self._progress = progress
        self._seen = 0

    def advance(self) -> None:
        if self._progress:
            now = os.lseek(self._fd, 0, os.SEEK_CUR)
            if now > self._seen:
                self._progress(now - self._seen)
                self._seen = now
