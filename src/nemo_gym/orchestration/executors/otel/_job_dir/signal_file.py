"""A signal file's lines, whether the collector wrote JSON lines or a zstd stream of them.

Python reads zstd itself only from 3.14 (``compression.zstd``). Before that the ``zstd``
command decompresses: every common distribution packages it, it is what the README's
``zstdcat | jq`` uses, and so reading the job's files needs no library beyond the run-time three.
Progress is counted in the file's own bytes, the unit of the progress bar's total: the child
reads through the same open file, so its offset is ours to read.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from .._common.constants import ZSTD_SUFFIX

Progress = Callable[[int], None]  # called with the bytes read since the last call


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

    def lines(self, progress: Progress | None = None) -> Iterator[bytes]:
        with self.path.open("rb") as raw:
            if self.path.suffix != ZSTD_SUFFIX:
                for line in raw:
                    if progress:
                        progress(len(line))
                    yield line
            elif os.fstat(raw.fileno()).st_size:  # an empty file is no stream (zstd says so)
                yield from self._decompressed(raw, _Offset(raw, progress))

    def _decompressed(self, raw: IO[bytes], offset: _Offset) -> Iterator[bytes]:
        try:
            from compression import zstd  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            yield from self._through_command(raw, offset)
            return
        try:
            for line in zstd.ZstdFile(raw):
                offset.advance()
                yield line
        except (EOFError, zstd.ZstdError):
            self.cut_short = True
        offset.advance()

    def _through_command(self, raw: IO[bytes], offset: _Offset) -> Iterator[bytes]:
        try:
            child = subprocess.Popen(
                ["zstd", "-dcq"], stdin=raw, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
        except FileNotFoundError:
            raise ZstdUnavailable(self.path) from None
        with child:
            assert child.stdout is not None
            for line in child.stdout:
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
