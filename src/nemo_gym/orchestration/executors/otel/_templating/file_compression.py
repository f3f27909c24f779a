"""Which collectors write the job's files as zstd, and the switch that starting them needs.

A day of the large job is 185 GB of JSON lines and 14.5 GB compressed (measured: README, "The
job's files"), so files are compressed wherever the collector can write a stream that standard tools read
(``zstdcat traces.jsonl.zst | jq``). The file exporter does that only with the alpha feature gate
``exporter.file.nativeCompression`` (contrib v0.154.0 on); without the gate its
``compression: zstd`` prefixes each compressed batch with its length, a format only the exporter's
own code reads. So: collectors from 0.154.0 on write ``<signal>.jsonl.zst`` and are started
with the gate, which is why the current line starts there. Older ones (the legacy line) write
``<signal>.jsonl`` rotated (at ``STEP_ROTATION``'s size unless ``otel.file_rotation`` says
otherwise), and the job step compresses each file the rotation finished into
``<signal>-<UTC time>.jsonl.zst`` with the ``zstd`` command (``_step/finished_files.py``): the
same standard stream, written once the collector is done with the file. An unnamed
``otel.collector_version`` means the newest line's newest collector, as everywhere else, and so
compresses itself; name the version of an older collector.
"""

from __future__ import annotations

from .._common.constants import SIGNAL_FILE_SUFFIX, ZSTD_SUFFIX
from .._submit.config import FileRotation, Otel
from .catalogue import Version, parse_version

NATIVE_ZSTD_GATE = "exporter.file.nativeCompression"
NATIVE_ZSTD_FROM: Version = (0, 154, 0)
# The legacy line's rotation when the submit config names none: a file is finished (and the step
# compresses it) every minute or so at the large job's load (about 1.5 MB/s of spans), and at most
# 100 MB a signal waits uncompressed; nothing is deleted.
STEP_ROTATION = FileRotation(max_megabytes=100, max_backups=0)


def compresses_files(otel: Otel) -> bool:
    """Whether the job's collector writes its files as zstd streams."""
    if "file" not in otel.exporters:
        return False
    if otel.collector_version is None:
        return True
    return parse_version(otel.collector_version, "otel.collector_version") >= NATIVE_ZSTD_FROM


def step_compresses_files(otel: Otel) -> bool:
    """Whether the job step compresses the files the collector's rotation finished (a file
    exporter that cannot write zstd itself)."""
    return "file" in otel.exporters and not compresses_files(otel)


def file_rotation(otel: Otel) -> FileRotation | None:
    """The file exporters' rotation: ``otel.file_rotation``, else where the step compresses
    finished files, ``STEP_ROTATION`` (it finishes them), else none."""
    if otel.file_rotation is not None or not step_compresses_files(otel):
        return otel.file_rotation
    return STEP_ROTATION


def signal_file_name(signal: str, compressed: bool) -> str:
    """The name of a signal's live file in ``<job dir>/otel/``."""
    return f"{signal}{SIGNAL_FILE_SUFFIX}{ZSTD_SUFFIX if compressed else ''}"


def rotated_file_glob(live_name: str) -> str:
    """The names the file exporter's rotation gives a live file as it finishes it, as a glob:
    ``<stem>-<UTC time><last suffix>`` (``traces-*.jsonl`` for ``traces.jsonl``,
    ``traces.jsonl-*.zst`` for ``traces.jsonl.zst``). The one place the rule is spelled: the
    step's bash, the step's data, ``report`` and the benchmarks all read it here."""
    stem, dot, suffix = live_name.rpartition(".")
    return f"{stem}-*{dot}{suffix}"


def finished_file_glob(signal: str) -> str:
    """The names a rotation gives a signal's plain files as it finishes them (``<signal>-<UTC
    time>.jsonl``), as a glob; the step's compressed copies add ``ZSTD_SUFFIX``."""
    return rotated_file_glob(signal_file_name(signal, compressed=False))


def gate_arguments(compressed: bool) -> tuple[str, ...]:
    """The collector's command-line arguments for a config whose file exporters do (not)
    compress. The gate is registered by the file exporter, so it is passed only where one is."""
    return (f"--feature-gates={NATIVE_ZSTD_GATE}",) if compressed else ()
