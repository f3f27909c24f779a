"""A passthrough FUSE file system whose flock(2) fails with ENOSYS, as on a Lustre client
mounted without ``flock`` or ``localflock``.

    python tests/support/noflock_fs.py SOURCE MOUNTPOINT

mounts SOURCE at MOUNTPOINT in the foreground (``.ci/job-fs-up`` runs it in the background and
unmounts it with ``fusermount3 -u``). Every operation is passed to SOURCE unchanged, except
``flock``, which answers ENOSYS: the kernel hands that error to the caller, exactly what the
collector's ``file_storage`` extension (bbolt) meets on such a mount. POSIX record locks
(``fcntl``) are left to the kernel's local emulation, as on a mount with ``localflock`` off.

It needs root (or ``user_allow_other``), ``/dev/fuse``, libfuse 3 (Debian's ``fuse3``) and the
``mfusepy`` binding (a test dependency).
"""

from __future__ import annotations

import errno
import os
import sys

import mfusepy

# What getattr and statfs hand FUSE of the backing file's lstat and the backing folder's statvfs.
_STAT_FIELDS = (
    "st_atime",
    "st_ctime",
    "st_gid",
    "st_mode",
    "st_mtime",
    "st_nlink",
    "st_size",
    "st_uid",
    "st_blocks",
)
_STATVFS_FIELDS = (
    "f_bavail",
    "f_bfree",
    "f_blocks",
    "f_bsize",
    "f_favail",
    "f_ffree",
    "f_files",
    "f_flag",
    "f_frsize",
    "f_namemax",
)


def _fields(result: os.stat_result | os.statvfs_result, names: tuple[str, ...]) -> dict[str, int]:
    return {name: getattr(result, name) for name in names}


class NoFlockPassthrough(mfusepy.Operations):
    """Each call on a path below the mount becomes the same call on SOURCE."""

    use_ns = True  # times in nanoseconds, as os.utime(ns=...) takes them

    def __init__(self, source: str) -> None:
        self.source = os.path.realpath(source)

    def _real(self, path: str) -> str:
        return os.path.join(self.source, path.lstrip("/"))

    # -- what this file system is for ----------------------------------------------------------

    def flock(self, path: str, fh: int, op: int) -> int:
        raise mfusepy.FuseOSError(errno.ENOSYS)

    # -- plain passthrough ---------------------------------------------------------------------

    def access(self, path: str, amode: int) -> int:
        if not os.access(self._real(path), amode):
            raise mfusepy.FuseOSError(errno.EACCES)
        return 0

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._real(path), mode)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        os.chown(self._real(path), uid, gid)
        return 0

    def create(self, path: str, mode: int, fi: object = None) -> int:
        return os.open(self._real(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)

    def flush(self, path: str, fh: int) -> int:
        return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        (os.fdatasync if datasync else os.fsync)(fh)
        return 0

    def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
        return _fields(os.lstat(self._real(path)), _STAT_FIELDS)

    def link(self, target: str, source: str) -> int:
        os.link(self._real(source), self._real(target))
        return 0

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._real(path), mode)
        return 0

    def open(self, path: str, flags: int) -> int:
        return os.open(self._real(path), flags)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._real(path))]

    def readlink(self, path: str) -> str:
        return os.readlink(self._real(path))

    def release(self, path: str, fh: int) -> int:
        os.close(fh)
        return 0

    def rename(self, old: str, new: str) -> int:
        os.rename(self._real(old), self._real(new))
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._real(path))
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        return _fields(os.statvfs(self._real(path)), _STATVFS_FIELDS)

    def symlink(self, target: str, source: str) -> int:
        os.symlink(source, self._real(target))
        return 0

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        if fh is None:
            os.truncate(self._real(path), length)
        else:
            os.ftruncate(fh, length)
        return 0

    def unlink(self, path: str) -> int:
        os.unlink(self._real(path))
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        os.utime(self._real(path), ns=times)
        return 0

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        return os.pwrite(fh, data, offset)


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        sys.exit("usage: noflock_fs.py SOURCE MOUNTPOINT")
    source, mountpoint = argv
    # allow_other: the Slurm jobs' steps and the tests reach it as any user; threads: the
    # collector reads and writes several files at once.
    mfusepy.FUSE(
        NoFlockPassthrough(source), mountpoint, foreground=True, allow_other=True, nothreads=False
    )


if __name__ == "__main__":
    main(sys.argv[1:])
