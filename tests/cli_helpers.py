"""Running the installed ``nemo-gym-otel`` console script the way a user does.

Through a subprocess, not ``main()``: exit codes, stderr and the absence of a traceback are
what a user sees, and only a real process shows them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLI = Path(sys.executable).with_name("nemo-gym-otel")
ERROR = "nemo-gym-otel: error: "
WARNING = "nemo-gym-otel: warning: "


def cli_env(**variables: str | None) -> dict[str, str]:
    """The test process's environment without ambient overrides; ``None`` unsets a variable."""
    env = {k: v for k, v in os.environ.items() if k != "NEMO_GYM_OTEL_TEMPLATE_PATH"}
    for name, value in variables.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run_cli(
    *args: str | os.PathLike[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    cli: Path = CLI,
) -> subprocess.CompletedProcess[str]:
    """Run the console script; whatever happens, stderr must never hold a traceback."""
    result = subprocess.run(
        [str(cli), *map(str, args)],
        cwd=cwd,
        env=cli_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def error_lines(stderr: str) -> list[str]:
    """The ``<path>: <message>`` part of every error line; any other line fails the test."""
    lines = stderr.splitlines()
    assert lines, "expected an error message on stderr"
    for line in lines:
        assert line.startswith(ERROR), f"not an error line: {line!r}"
    return [line.removeprefix(ERROR) for line in lines]


def tree(root: Path) -> set[str]:
    """Every file and folder below ``root``, to prove a failing command wrote nothing."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}
