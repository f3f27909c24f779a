"""The real collector binaries for the tests, built by tools/build-otelcol on first use.

Outside CI a test that needs a collector skips when none can be built, saying how to enable it;
with CI=true it fails instead, so a broken toolchain can never pass as a green run.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import pytest

from . import helpers, upstream_corpus

BUILD = helpers.REPO / "tools" / "build-otelcol"


def collector_lines() -> list[str]:
    result = subprocess.run([str(BUILD), "--list"], capture_output=True, text=True, check=True)
    return result.stdout.split()


@functools.cache
def build_collector(line: str) -> tuple[Path | None, str]:
    """``tools/build-otelcol LINE``: the binary, or None and the end of the tool's error output."""
    try:
        result = subprocess.run(
            [str(BUILD), line], capture_output=True, text=True, timeout=1800, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    if result.returncode != 0:
        return None, result.stderr.strip()[-2000:]
    return Path(result.stdout.strip().splitlines()[-1]), ""


def collector_binary(line: str) -> Path:
    binary, error = build_collector(line)
    if binary is not None:
        return binary
    message = f"no {line} collector: {error}\nInstall Go 1.25+ and run tools/build-otelcol {line} to enable this test."
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def go_module_cache() -> Path:
    """The Go module cache holding the manifests' module sources (their testdata, their
    ``metadata.yaml``); without a go command, a skip, or a failure under CI=true."""
    try:
        return upstream_corpus.module_cache()
    except (OSError, ValueError) as exc:  # no go command
        if os.environ.get("CI") == "true":
            pytest.fail(f"no Go module cache: {exc}")
        pytest.skip(f"no Go module cache ({exc}); install Go and run tools/build-otelcol")


# What the collector's environment holds in a job: the expansions the templates write resolve.
VALIDATE_ENV = {"OTEL_TOKEN": "validate-only-token", "SLURM_JOB_ID": "4242", "USER": "gym-user"}


def run_validate(binary: Path, config_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), "validate", "--config", f"file:{config_path}"],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **VALIDATE_ENV},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
