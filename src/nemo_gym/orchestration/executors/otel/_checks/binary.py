"""The collector's own verdict on a config: ``BINARY validate``, beside the package's checks.

A schema cannot judge OTTL statements or files on the node, and a platform team's clusters run
a collector of their own; its ``validate`` can. The binary sees a placeholder for every
``${env:NAME}`` the config expands and nothing of the caller's environment but ``PATH``, so the
ingest token never reaches it, nor its messages.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .._common.errors import CollectorConfigError, Violation

PLACEHOLDER = "nemo-gym-otel-placeholder"
VALIDATE_TIMEOUT_SECONDS = 120
_EXPANSION = re.compile(r"\$\$|\$\{(?:env:)?([a-zA-Z_][a-zA-Z0-9_]*)")  # $$ is a literal $
_RELEASE = re.compile(r"\bversion v?(\d+\.\d+\.\d+)")
_ERROR_START = "Error: "
_LOG_LINE = re.compile(r"^\d{4}[/-]\d\d[/-]\d\d[ T]")  # the collector's own log lines


@dataclass(frozen=True)
class CollectorVerdict:
    """What ``BINARY validate`` said: valid, or the first error line it printed."""

    binary: str
    valid: bool
    message: str = ""


def collector_release(binary: str | os.PathLike[str]) -> str:
    """The release ``BINARY --version`` names (``otelcol-contrib version 0.161.0``)."""
    try:
        result = subprocess.run(
            [os.fspath(binary), "--version"],
            env=placeholder_environment(""),
            capture_output=True,
            text=True,
            timeout=VALIDATE_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _cannot_run(binary, getattr(exc, "strerror", None) or "it did not answer") from None
    found = _RELEASE.search(result.stdout)
    if found is None:
        raise _cannot_run(binary, "its --version names no release")
    return found[1]


def _cannot_run(binary: str | os.PathLike[str], reason: str) -> CollectorConfigError:
    return CollectorConfigError(
        [
            Violation(
                "--collector",
                f"cannot run {os.fspath(binary)} ({reason}); pass the path of an "
                "OpenTelemetry Collector binary",
            )
        ]
    )


def placeholder_environment(text: str) -> dict[str, str]:
    """``PATH`` and a placeholder for each variable the config expands."""
    names = {name for name in _EXPANSION.findall(text) if name}
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **dict.fromkeys(names, PLACEHOLDER)}


def collector_verdict(binary: str | os.PathLike[str], text: str) -> CollectorVerdict:
    """Run ``binary validate`` on ``text``; raises :class:`CollectorConfigError` naming the
    ``--collector`` flag when the binary cannot be run at all."""
    with tempfile.TemporaryDirectory(prefix="nemo-gym-otel-") as folder:
        path = Path(folder) / "collector.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            result = subprocess.run(
                [os.fspath(binary), "validate", f"--config=file:{path}"],
                env=placeholder_environment(text),
                capture_output=True,
                text=True,
                timeout=VALIDATE_TIMEOUT_SECONDS,
                check=False,
            )
        except OSError as exc:
            raise _cannot_run(binary, exc.strerror or str(exc)) from None
        except subprocess.TimeoutExpired:
            return CollectorVerdict(
                os.fspath(binary), False, f"validate did not finish in {VALIDATE_TIMEOUT_SECONDS}s"
            )
    if result.returncode == 0:
        return CollectorVerdict(os.fspath(binary), True)
    return CollectorVerdict(os.fspath(binary), False, _error_message(result).replace(folder, "."))


def _error_message(result: subprocess.CompletedProcess[str]) -> str:
    """The collector's error, from ``Error: `` on, on one line without its log lines."""
    lines = [line.strip() for line in result.stderr.splitlines()]
    start = next((i for i, line in enumerate(lines) if line.startswith(_ERROR_START)), None)
    if start is None:
        kept = [line for line in lines if line][-1:]
    else:
        kept = [line for line in lines[start:] if line and not _LOG_LINE.match(line)]
        kept[0] = kept[0].removeprefix(_ERROR_START)
    return " ".join(kept) or f"exit code {result.returncode}"
