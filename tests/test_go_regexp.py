"""The package's reading of Go's regular expressions (``_checks/go_regexp.py``) and of OTTL's
string literals (``ottl.string_value``), judged by Go itself.

Go is the oracle: ``support/go_oracle`` (the standard library only) is built with the Go
toolchain that builds the collectors and answers ``regexp.Compile`` and ``strconv.Unquote`` for
each input. The inputs are Go's own test data (every string literal of ``regexp/syntax``'s and
``regexp``'s tests and RE2's search tests, read from the toolchain's sources), and patterns
assembled from a fixed seed out of the syntax's pieces, valid and not. The verdict, Go's
message and the capture names must match, except where the package says it is lenient: the
size limits (``expression too large``).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import helpers

from nemo_gym.orchestration.executors.otel._checks.go_regexp import (
    GoRegexpError,
    check_go_regexp,
)
from nemo_gym.orchestration.executors.otel._checks.ottl import string_value

ORACLE = Path(__file__).parent / "support" / "go_oracle"
LENIENT = "expression too large"
# Pieces of the syntax, valid and invalid, that the seeded patterns are assembled from.
PIECES = (
    *"ab()|*+?.^$-]",
    *("(?:", "(?i)", "(?i:", "(?-s)", "(?-)", "(?U)", "(?x)", "(?P<n>", "(?<m>", "(?P<>"),
    *("(?=", "(?!", "(?<=", "(?P=n)", "*?", "{2}", "{1,3}", "{,3}", "{3,}", "{0}", "{1001}"),
    *("{2,1}", "{1000}", "{", "}", "[", "[^", "[a-z]", "[z-a]", "[:alpha:]", "[[:word:]]"),
    *("[[:foo:]]", "[^\\d-z]", "\\", "\\d", "\\pL", "\\pX", "\\p{Greek}", "\\p{}", "\\P{^L}"),
    *("\\Q", "\\E", "\\z", "\\Z", "\\A", "\\b", "\\1", "\\12", "\\0", "\\x4", "\\x41"),
    *("\\x{41}", "\\x{}", "\\x{110000}", "\\C", "\\e", "\\.", "\\_", "\\n", "\\k", "é", "\\é"),
)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Any:
    go = shutil.which("go")
    if go is None:
        helpers.unavailable("go is not on PATH: the Go toolchain is Go's regexp oracle here")
    binary = tmp_path_factory.mktemp("oracle") / "oracle"
    subprocess.run([go, "build", "-o", str(binary), "."], cwd=ORACLE, check=True)

    def ask(kind: str, texts: list[str]) -> list[tuple[bool, str, list[str] | None]]:
        lines = "".join(json.dumps([kind, text]) + "\n" for text in texts)
        done = subprocess.run(
            [str(binary)], input=lines, capture_output=True, text=True, check=True
        )
        return [tuple(json.loads(line)) for line in done.stdout.splitlines()]  # type: ignore[misc]

    return ask


def _goroot() -> Path:
    return Path(
        subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True).stdout.strip()
    )


def _go_literals(path: Path) -> list[str]:
    """Every string literal of a Go source file: raw ones as written, interpreted ones as Go
    unquotes them (those ``string_value`` reads; the others are left out)."""
    text = path.read_text(encoding="utf-8")
    raw = re.findall(r"`([^`]*)`", text)
    quoted = [string_value(m) for m in re.findall(r'"(?:\\.|[^\\"\n])*"', text)]
    return raw + [value for value in quoted if value is not None]


def _re2_search_regexps(path: Path) -> list[str]:
    """The regexps of RE2's search tests: the quoted lines after each ``regexps`` header."""
    found, in_regexps = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line in ("strings", "regexps"):
            in_regexps = line == "regexps"
        elif in_regexps and line.startswith('"') and (value := string_value(line)) is not None:
            found.append(value)
    return found


def _judge(pattern: str) -> tuple[bool, str, list[str] | None]:
    try:
        captures = check_go_regexp(pattern)
    except GoRegexpError as exc:
        return False, str(exc), None
    return True, "", ["", *captures.names]


def _disagreements(patterns: list[str], oracle: Any) -> list[str]:
    wrong = []
    for pattern, (go_ok, go_error, go_names) in zip(
        patterns, oracle("regexp", patterns), strict=True
    ):
        ours = _judge(pattern)
        if not go_ok and LENIENT in go_error and ours[0]:
            continue
        if ours != (go_ok, go_error, go_names if go_ok else None):
            wrong.append(f"{pattern!r}: Go {(go_ok, go_error, go_names)}, package {ours}")
    return wrong


def test_go_s_own_test_patterns_are_judged_as_go_judges_them(oracle: Any) -> None:
    goroot = _goroot()
    patterns = sorted(
        {
            *_go_literals(goroot / "src/regexp/syntax/parse_test.go"),
            *_go_literals(goroot / "src/regexp/all_test.go"),
            *_re2_search_regexps(goroot / "src/regexp/testdata/re2-search.txt"),
        }
    )
    assert len(patterns) > 1000, "Go's test data moved: read it from its new place"
    # The nesting limits its tests build in code: 1000 levels deep, and far past them.
    patterns += [f"{'(' * n}{')' * n}" for n in (998, 999, 1000, 1001)]
    patterns += ["(?:" * 1000 + ")*" * 1000, "(?:" * 5000 + ")" * 5000, "(" * 20000]
    wrong = _disagreements(patterns, oracle)
    assert not wrong, f"{len(wrong)} of {len(patterns)}:\n" + "\n".join(wrong[:30])


def test_patterns_assembled_from_the_syntax_are_judged_as_go_judges_them(oracle: Any) -> None:
    rng = random.Random(20261206)
    patterns = sorted(
        {"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 8))) for _ in range(20000)}
    )
    refused = sum(1 for ok, _, _ in oracle("regexp", patterns) if not ok)
    assert 0.2 < refused / len(patterns) < 0.9, "the pieces no longer make both kinds"
    wrong = _disagreements(patterns, oracle)
    assert not wrong, f"{len(wrong)} of {len(patterns)}:\n" + "\n".join(wrong[:30])


def test_the_size_limits_are_left_to_the_collector(oracle: Any) -> None:
    """Go counts the compiled program's size, which no config comes near: the package takes
    what only that limit refuses."""
    too_long = "(xx?){1000}" * 1000
    [(go_ok, go_error, _)] = oracle("regexp", [too_long])
    assert not go_ok and LENIENT in go_error
    assert check_go_regexp(too_long).names == ("",) * 1000


def test_ottl_string_literals_unquote_as_go_unquotes_them(oracle: Any) -> None:
    literals = [
        r'"plain"',
        r'"a\\b"',
        r'"\"q\""',
        r'"\x41\101\u00e9\U0001F600"',
        r'"\a\b\f\n\r\t\v"',
        r'"\d"',
        r'"\x4"',
        r'"\400"',
        r'"\ud800"',
        r'"\'"',
        r'"\U00110000"',
        r'"tab\	"',
    ]
    for literal, (go_ok, _, go_value) in zip(literals, oracle("unquote", literals), strict=True):
        ours = string_value(literal)
        assert (ours is not None) == go_ok, literal
        assert ours is None or [ours] == go_value, literal
