"""The atomic write: the config appears whole or not at all, and a failure leaves nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import helpers

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import SubmitConfigError, write_collector_config
from nemo_gym.orchestration.executors.otel._common.atomic_file import (
    write_atomically,
    write_together,
)


def test_writes_the_text_and_makes_the_missing_folders(tmp_path: Path) -> None:
    target = tmp_path / "runs" / "g1" / "aime25" / "otel" / "collector.yaml"
    write_atomically(target, "a: 1\n")
    assert target.read_text(encoding="utf-8") == "a: 1\n"
    assert helpers.tree(tmp_path) == {
        "runs",
        "runs/g1",
        "runs/g1/aime25",
        "runs/g1/aime25/otel",
        "runs/g1/aime25/otel/collector.yaml",
    }


def test_replaces_an_existing_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "collector.yaml"
    target.write_text("old: true\n" * 1000, encoding="utf-8")
    write_atomically(target, "new: true\n")
    assert target.read_text(encoding="utf-8") == "new: true\n"
    assert helpers.tree(tmp_path) == {"collector.yaml"}


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_failure_leaves_no_file_and_no_folder_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    (tmp_path / "runs").mkdir()
    existing = tmp_path / "runs" / "kept.txt"
    existing.write_text("x", encoding="utf-8")

    def fail(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, fail)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(tmp_path / "runs" / "g1" / "otel" / "collector.yaml", "a: 1\n")
    assert helpers.tree(tmp_path) == {"runs", "runs/kept.txt"}


def test_a_failure_keeps_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "collector.yaml"
    target.write_text("previous: true\n", encoding="utf-8")
    monkeypatch.setattr(os, "replace", lambda *args: (_ for _ in ()).throw(OSError(5, "EIO")))
    with pytest.raises(OSError):
        write_atomically(target, "next: true\n")
    assert target.read_text(encoding="utf-8") == "previous: true\n"
    assert helpers.tree(tmp_path) == {"collector.yaml"}


def test_write_collector_config_writes_where_collector_config_path_says(
    tmp_path: Path, example_mapping: dict
) -> None:
    config = SubmitConfig.from_dict(example_mapping)
    job_dir = tmp_path / "gym-1" / "aime25"
    written = write_collector_config(config, "aime25", job_dir)
    assert written == job_dir / "otel" / "collector.yaml"
    assert written.read_text(encoding="utf-8").startswith("# OpenTelemetry Collector config")


def test_a_refused_render_writes_nothing(tmp_path: Path, example_mapping: dict) -> None:
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(SubmitConfigError):
        write_collector_config(config, "no-such-benchmark", tmp_path / "gym-1" / "x")
    assert helpers.tree(tmp_path) == set()


@pytest.mark.parametrize("failing", ["first", "second"])
def test_a_failure_of_either_of_two_files_keeps_both_previous_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """Both temporaries are written before either is fsynced: a failure of the second's fsync
    fails the write too, and leaves neither temporary."""
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(f"previous {name}\n", encoding="utf-8")
    real_fsync = os.fsync
    failing_name = {"first": ".a.yaml.", "second": ".b.yaml."}[failing]

    def fsync(fd: int) -> None:
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(failing_name):
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output"):
        write_together(tmp_path, [("a.yaml", "new a\n"), ("b.yaml", "new b\n")])
    assert helpers.tree(tmp_path) == {"a.yaml", "b.yaml"}
    assert [(tmp_path / n).read_text(encoding="utf-8") for n in ("a.yaml", "b.yaml")] == [
        "previous a.yaml\n",
        "previous b.yaml\n",
    ]


def test_a_failed_folder_fsync_leaves_nothing_it_renamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the renames only the folder fsync can fail: the write removes what it renamed into
    place and the folders it made, so no half of a pair stays behind."""
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.path.isdir(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output"):
        write_together(tmp_path / "otel", [("drain.yaml", "d\n"), ("collector.yaml", "c\n")])
    assert helpers.tree(tmp_path) == set()


def test_two_files_are_written_and_a_removed_one_is_gone(tmp_path: Path) -> None:
    (tmp_path / "drain.yaml").write_text("earlier\n", encoding="utf-8")
    write_together(tmp_path, [("collector.yaml", "c\n")], removed=["drain.yaml"])
    assert helpers.tree(tmp_path) == {"collector.yaml"}
    write_together(tmp_path, [("drain.yaml", "d\n"), ("collector.yaml", "c2\n")])
    assert {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()} == {
        "drain.yaml": "d\n",
        "collector.yaml": "c2\n",
    }
