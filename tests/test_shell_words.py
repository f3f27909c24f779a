"""The ``sh`` filter, the one way a value enters the job step's bash: bash reads every value back
as exactly the word or words it was, whatever characters it holds."""

from __future__ import annotations

import subprocess
from pathlib import PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_gym.orchestration.executors.otel._templating.shell import shell_words

# Any text bash can hold in a word: everything but NUL (and lone surrogates, which no path has).
word = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30
)


def _read_back(words: str) -> list[str]:
    """The words as bash passes them to a command, one NUL-terminated argument each."""
    out = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {words}"], capture_output=True, check=True, timeout=30
    ).stdout
    return out.decode("utf-8").split("\0")[:-1]


@settings(max_examples=60, deadline=None)
@given(st.lists(word, min_size=1, max_size=4))
def test_bash_reads_every_value_back_as_it_was(values: list[str]) -> None:
    assert _read_back(shell_words(values)) == values
    assert _read_back(shell_words(values[0])) == [values[0]]


def test_paths_and_integers_are_words_too() -> None:
    path = PurePosixPath("/runs/it's a $(touch x) `y` job/otel")
    assert _read_back(shell_words((path, 13133, "*"))) == [str(path), "13133", "*"]
    assert shell_words(13133) == "13133"  # digits stand as they are, in a message too
    assert shell_words("/lustre/runs/gym-1") == "/lustre/runs/gym-1"


@pytest.mark.parametrize("value", [True, None, 1.5, {"a": 1}, b"bytes"])
def test_what_is_no_shell_value_is_refused(value: object) -> None:
    with pytest.raises(TypeError, match="as a shell word"):
        shell_words(value)
