"""Which collectors write the job's files as zstd, and the switch that starting them needs.

A day of the large job is 185 GB of JSON lines and 14.5 GB compressed (measured: README, "The
job's files"), so files are compressed wherever the collector can write a stream that standard tools read
(``zstdcat traces.jsonl.zst | jq``). The file exporter does that only with the alpha feature gate
``exporter.file.nativeCompression`` (contrib v0.154.0 on); without the gate its
``compression: zstd`` prefixes each compressed batch with its length, a format only the exporter's
own code reads. So: collectors from 0.154.0 on write ``<signal>.jsonl.zst`` and are started
with the gate, which is why the current line starts there; older ones (the legacy line) write
``<signal>.jsonl``. An unnamed ``otel.collector_version`` means the newest line's newest
collector, as everywhere else, and so compresses; name the version of an older collector.
"""

from __future__ import annotations

from .._common.constants import SIGNAL_FILE_SUFFIX, ZSTD_SUFFIX
from .._submit.config import Otel
from .catalogue import Version, parse_version

NATIVE_ZSTD_GATE = "exporter.file.nativeCompression"
NATIVE_ZSTD_FROM: Version = (0, 154, 0)


def compresses_files(otel: Otel) -> bool:
    """Whether the job's collector writes its files as zstd streams."""
    if "file" not in otel.exporters:
        return False
    if otel.collector_version is None:
        return True
    return parse_version(otel.collector_version, "otel.collector_version") >= NATIVE_ZSTD_FROM


def signal_file_name(signal: str, compressed: bool) -> str:
    """The name of a signal's live file in ``<job dir>/otel/``."""
    return f"{signal}{SIGNAL_FILE_SUFFIX}{ZSTD_SUFFIX if compressed else ''}"


def gate_arguments(compressed: bool) -> tuple[str, ...]:
    """The collector's command-line arguments for a config whose file exporters do (not)
    compress. The gate is registered by the file exporter, so it is passed only where one is."""
    return (f"--feature-gates={NATIVE_ZSTD_GATE}",) if compressed else ()
