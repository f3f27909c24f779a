"""Verdicts on configs shown: text for people (errors and warnings on stderr, one line per
valid config on stdout) or one JSON list for scripts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TextIO

from .._common.errors import Violation
from .._render.verdicts import ConfigVerdict


def origin_text(origin: str) -> str:
    """Where a template came from, as the listings say it."""
    return origin if origin == "built-in" else f"override {origin}"


def warning_lines(prog: str, found: Sequence[Violation], prefix: str = "") -> list[str]:
    return [f"{prog}: warning: {prefix}{violation}" for violation in found]


def show_verdicts(
    verdicts: Sequence[ConfigVerdict],
    output: str,
    ok_line: str,
    prog: str,
    out: TextIO,
    err: TextIO,
) -> None:
    """Print ``verdicts`` as ``output`` ("text" or "json"); ``ok_line`` is the text line of a
    valid config, with ``{label}`` for its name."""
    if output == "json":
        print(json.dumps([verdict.as_json() for verdict in verdicts], indent=2), file=out)
        return
    several = len(verdicts) > 1
    for verdict in verdicts:
        # A file's violations name their own paths in it, and the file when several are judged;
        # a rendering's always say which it is; a YAML syntax error already names the file.
        named = several or "file" not in verdict.subject
        prefix = f"{verdict.label}: " if named else ""
        for violation in verdict.violations:
            shown = "" if violation.path.startswith(verdict.label) else prefix
            print(f"{prog}: error: {shown}{violation}", file=err)
        for message in warning_lines(prog, verdict.warnings, f"{verdict.label}: "):
            print(message, file=err)  # a warning always says where
        collector = verdict.collector
        if collector is not None and not collector.valid:
            print(
                f"{prog}: error: {verdict.label}: collector {collector.binary}: {collector.message}",
                file=err,
            )
        if verdict.valid:
            suffix = "" if collector is None else f" (collector {collector.binary}: valid)"
            origin = verdict.subject.get("origin")
            suffix = f" ({origin_text(origin)})" + suffix if origin else suffix
            print(ok_line.format(label=verdict.label) + suffix, file=out)
