"""Hostile values that are not refused but must come out right (issue 10, classes 2, 4 and 6):
whole-number floats, tokens YAML would retype, ``env`` output under ``eval``, files that never
end, inputs of a megabyte, job directories with ``:``, and writes interrupted by signals.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import helpers
from support.bounded import Bounded, assert_within_bounds, run_bounded
from support.otelcol import collector_binary, run_validate

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import (
    SubmitConfigError,
    collector_step_script,
    render_collector_config,
    resolve_token,
    write_collector_config,
)
from nemo_gym.orchestration.executors.otel._common.constants import (
    DRAIN_CONFIG_NAME,
    INGEST_CONFIG_NAME,
    SENDER_CONFIG_NAME,
)


def _example(**otel: object) -> dict:
    mapping = helpers.load_mapping(helpers.EXAMPLE)
    mapping["otel"].update(otel)
    return mapping


# -- class 4: values the collector would refuse or misread --------------------------------------


def test_whole_number_floats_render_as_integers() -> None:
    """JSON Schema's integer takes 8000.0; the collector takes neither localhost:8000.0 nor 7.0s."""
    mapping = _example(scrape_interval_seconds=7.0, node_metrics_port=9100.0)
    mapping["services"]["policy"]["port"] = 8000.0
    config = SubmitConfig.from_dict(mapping)
    text = render_collector_config(config, "aime25", "/r/gym-1/aime25")
    assert 'scrape_interval: "7s"' in text
    # The ports reach the collector through the targets files the job step writes.
    plan = collector_step_script(config, "aime25", "/r/gym-1/aime25")
    assert "model-policy.json 0 8000 policy\n" in plan and "node.json * 9100 -\n" in plan
    assert "8000.0" not in plan and "9100.0" not in plan


def test_a_fractional_port_is_refused() -> None:
    mapping = _example()
    mapping["services"]["policy"]["port"] = 8000.5
    with pytest.raises(SubmitConfigError) as caught:
        SubmitConfig.from_dict(mapping)
    assert caught.value.path == "services.policy.port"


@pytest.mark.parametrize(
    "token", ["2001-12-14", "2001-12-14T21:59:43.10-05:00", "2001-12-14 21:59:43", "1:20"]
)
def test_tokens_yaml_reads_as_dates_or_sexagesimals_are_refused(token: str) -> None:
    """The collector reads ``${env:OTEL_TOKEN}`` as YAML: a date becomes a time and stops it."""
    config = SubmitConfig.from_dict(_example())
    with pytest.raises(SubmitConfigError) as caught:
        resolve_token(config, {"OTEL_TOKEN": token})
    assert token not in str(caught.value)


def test_env_output_is_safe_to_eval_in_posix_sh(tmp_path: Path) -> None:
    values = {
        "A": "$(touch PWNED1)",
        "B": "`touch PWNED2`; echo x",
        "C": 'it\'s "quoted"\nand two lines',
        "D": "${HOME} $HOME \\ * ? [a]",
        "E": "",
    }
    mapping = _example()
    mapping["driver"]["env"] = {name: f"lit:{value}" for name, value in values.items()}
    config = tmp_path / "submit.yaml"
    config.write_text(yaml.safe_dump(mapping), encoding="utf-8")
    printed = helpers.run_cli("env", config, "--gym-job-id", "gym-1", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    script = printed.stdout + "".join(f'printf "%s\\0" "${name}"\n' for name in values)
    shell = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, timeout=30)
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.decode().split("\0")[:-1] == list(values.values())
    assert not list(tmp_path.glob("PWNED*"))


@pytest.mark.collector
def test_a_job_directory_with_a_colon_reaches_the_collector(tmp_path: Path) -> None:
    """``--config=/a:b/...`` reads as a URI scheme; the step passes ``file:<path>``, which the
    collector takes whatever the path holds (checked with the real binary, both ways)."""
    binary = collector_binary("current")
    job_dir = tmp_path / "runs: x" / "gym:1" / "aime25"  # the last part is the benchmark
    config = SubmitConfig.from_dict(_example())
    written = write_collector_config(config, "aime25", job_dir)
    assert run_validate(binary, written).returncode == 0
    bare = subprocess.run(
        [str(binary), "validate", f"--config={written}"], capture_output=True, text=True, timeout=60
    )
    assert bare.returncode != 0 and "invalid uri" in bare.stderr


# -- class 2: files that never end, inputs of a megabyte ----------------------------------------


@pytest.mark.parametrize("command", ["validate", "render"])
def test_dev_zero_is_refused_as_not_a_regular_file(tmp_path: Path, command: str) -> None:
    args = (
        ["--benchmark", "aime25", "--job-dir", str(tmp_path / "r/g/a")]
        if command == "render"
        else []
    )
    result = run_bounded(
        [helpers.CLI, command, "/dev/zero", *args], cwd=tmp_path, env=helpers.cli_env()
    )
    assert result.returncode == 1
    assert helpers.error_lines(result.stderr) == [
        "/dev/zero: is not a regular file (a device); name a YAML file"
    ]
    assert_within_bounds(result)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "collector.yaml"
    os.mkfifo(fifo)
    result = run_bounded([helpers.CLI, "validate", fifo], cwd=tmp_path, env=helpers.cli_env())
    assert result.returncode == 1
    assert helpers.error_lines(result.stderr) == [
        f"{fifo}: is not a regular file (a FIFO); name a YAML file"
    ]


def _megabyte_submit_config() -> str:
    """A valid submit config of about 1 MB: thousands of benchmarks with their settings."""
    text = helpers.EXAMPLE.read_text(encoding="utf-8")
    extra = "".join(
        f"    bench_{i}:\n      run:\n        num_repeats: {i % 9 + 1}\n        note: {'n' * 40}\n"
        for i in range(9_950)
    )
    return text.replace("  benchmarks:\n", "  benchmarks:\n" + extra, 1)


def test_a_megabyte_submit_config_renders_within_bounds(tmp_path: Path) -> None:
    config = tmp_path / "submit.yaml"
    config.write_text(_megabyte_submit_config(), encoding="utf-8")
    assert 1_000_000 <= config.stat().st_size < 1_048_576
    result = run_bounded(
        [
            helpers.CLI,
            "render",
            config,
            "--benchmark",
            "bench_77",
            "--job-dir",
            tmp_path / "r/g/bench_77",
            "--stdout",
        ],
        cwd=tmp_path,
        env=helpers.cli_env(OTEL_TOKEN="t"),
    )
    assert result.returncode == 0, result.stderr
    assert '"bench_77"' in result.stdout
    assert_within_bounds(result)


def _golden_text() -> str:
    """The bundled example's rendering on the current line: a valid config to grow."""
    return (helpers.REPO / "tests/golden/example/current/otlp_http+file.yaml").read_text("utf-8")


def test_a_megabyte_collector_config_is_judged_within_bounds(tmp_path: Path) -> None:
    """A megabyte of scrape jobs, one of them wrong: found, named, within bounds."""
    golden = _golden_text()
    jobs = "".join(
        f'        - job_name: "job{i}"\n          static_configs:\n            - targets: ["localhost:{1000 + i % 60000}"]\n'
        for i in range(11_000)
    )
    text = golden.replace("      scrape_configs:\n", "      scrape_configs:\n" + jobs, 1)
    text = text.replace(
        'job_name: "job5000"', 'job_name: "job5000"\n          scrape_intervall: 5s', 1
    )
    path = tmp_path / "big.yaml"
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size >= 1_000_000
    result = run_bounded([helpers.CLI, "validate", path], cwd=tmp_path, env=helpers.cli_env())
    assert result.returncode == 1
    (line,) = helpers.error_lines(result.stderr)
    assert line.startswith("receivers.prometheus.config.scrape_configs[5000].scrape_intervall: ")
    assert_within_bounds(result)


def test_a_megabyte_collector_config_wrong_everywhere_is_answered_within_bounds(
    tmp_path: Path,
) -> None:
    """Every one of 9,000 scrape jobs misspells a key: the first 100 are explained, the rest
    counted in one line, within bounds (explaining all of them took 9 s of CPU)."""
    golden = _golden_text()
    jobs = "".join(
        f'        - job_name: "job{i}"\n          scrape_intervall: 5s\n          static_configs:\n            - targets: ["localhost:{1000 + i % 60000}"]\n'
        for i in range(9_000)
    )
    path = tmp_path / "big.yaml"
    path.write_text(golden.replace("      scrape_configs:\n", "      scrape_configs:\n" + jobs, 1))
    assert path.stat().st_size >= 1_000_000
    result = run_bounded([helpers.CLI, "validate", path], cwd=tmp_path, env=helpers.cli_env())
    assert result.returncode == 1
    lines = helpers.error_lines(result.stderr)
    assert len(lines) == 101
    assert (
        sum(line.endswith("unknown key; did you mean 'scrape_interval'?") for line in lines) == 100
    )
    assert "<root>: 8900 more schema violations are not listed" in lines[-1]
    assert_within_bounds(result)


def test_a_megabyte_ottl_condition_is_judged_within_bounds(tmp_path: Path) -> None:
    """One filter condition of a megabyte, 30,000 calls joined by ``and``, the last misspelt:
    named, within bounds (the lexer copied the rest of the text for each token: 13 s)."""
    calls = ['IsMatch(attributes["k"], "x")'] * 29_999 + ['IsMatchh(attributes["k"], "x")']
    body = f"traces:\n  span:\n    - '{' and '.join(calls)}'"
    path = tmp_path / "ottl.yaml"
    path.write_text(helpers.one_processor_config("filter", body, "traces"), encoding="utf-8")
    assert path.stat().st_size >= 1_000_000
    result = run_bounded([helpers.CLI, "validate", path], cwd=tmp_path, env=helpers.cli_env())
    assert result.returncode == 1
    (line,) = helpers.error_lines(result.stderr)
    assert line.startswith("processors.filter/x.traces.span[0]: OTTL condition calls 'IsMatchh'")
    assert line.endswith("did you mean 'IsMatch'?")
    assert_within_bounds(result)


def test_a_regular_expression_of_900_kb_is_judged_within_bounds(tmp_path: Path) -> None:
    """A relabel regex of 180,000 classes, the last a range backwards: Go's refusal, within
    bounds (the reader copied the rest of the pattern at each step: 37 s)."""
    pattern = "[a-z]" * 180_000 + "[z-a]"
    golden = _golden_text()
    job = (
        '        - job_name: "long-regex"\n'
        '          static_configs:\n            - targets: ["localhost:8000"]\n'
        "          relabel_configs:\n            - source_labels: [__address__]\n"
        f'              regex: "{pattern}"\n              action: keep\n'
    )
    path = tmp_path / "regex.yaml"
    path.write_text(golden.replace("      scrape_configs:\n", "      scrape_configs:\n" + job, 1))
    assert path.stat().st_size >= 900_000
    result = run_bounded([helpers.CLI, "validate", path], cwd=tmp_path, env=helpers.cli_env())
    assert result.returncode == 1
    (line,) = helpers.error_lines(result.stderr)
    prefix = "receivers.prometheus.config.scrape_configs[0].relabel_configs[0].regex: "
    assert line.startswith(prefix)
    assert "invalid character class range: `z-a`" in line
    assert_within_bounds(result)


def _golden_document() -> dict[str, Any]:
    return yaml.safe_load(_golden_text())


def _validate_document(document: dict[str, Any], tmp_path: Path) -> Bounded:
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return run_bounded([helpers.CLI, "validate", path], cwd=tmp_path, env=helpers.cli_env())


def test_a_loop_through_thousands_of_connectors_is_named_in_one_line(tmp_path: Path) -> None:
    """3,000 pipelines chained through forward connectors back to the first: the cycle is
    found without recursion (this was a RecursionError traceback) and named in one short line."""
    document = _golden_document()
    chain = 3_000
    pipelines = document["service"]["pipelines"]
    for n in range(chain):
        document["connectors"][f"forward/c{n}"] = None
        pipelines[f"traces/c{n}"] = {
            "receivers": [f"forward/c{n}"],
            "exporters": [f"forward/c{(n + 1) % chain}"],
        }
    result = _validate_document(document, tmp_path)
    assert result.returncode == 1, result.stderr
    (line,) = helpers.error_lines(result.stderr)
    assert line.startswith("service.pipelines: pipelines form a cycle through connectors (")
    assert f"({chain - 4} more)" in line and len(line) < 300, line
    assert_within_bounds(result)


def test_twenty_thousand_pipelines_are_judged_within_bounds(tmp_path: Path) -> None:
    """Each names a receiver that does not exist: one line each, in time linear in the
    pipelines (finding connector loops compared every pipeline with every other: 114 s)."""
    document = _golden_document()
    for n in range(20_000):
        document["service"]["pipelines"][f"traces/p{n}"] = {
            "receivers": [f"nosuch{n}"],
            "exporters": ["file/traces"],
        }
    result = _validate_document(document, tmp_path)
    assert result.returncode == 1
    lines = helpers.error_lines(result.stderr)
    assert len(lines) == 20_000
    assert lines[0].startswith("service.pipelines.traces/p0.receivers.nosuch0: ")
    assert_within_bounds(result)


# -- class 6: interrupted writes -----------------------------------------------------------------

# The files a default rendering writes beside collector.yaml, by stem.
COMPANIONS = tuple(
    name.removesuffix(".yaml")
    for name in (DRAIN_CONFIG_NAME, INGEST_CONFIG_NAME, SENDER_CONFIG_NAME)
)
# Runs the CLI in a child that delivers a signal to itself in the middle of the write, right after
# the temporary file is written: the moment a real signal would leave it behind.
_SIGNAL_DURING_WRITE = textwrap.dedent(
    """
    import os, signal, sys, threading
    from nemo_gym.orchestration.executors.otel import _cli
    real_fsync = os.fsync
    once = threading.Lock()  # one signal, at the first fsync, whichever thread makes it
    def fsync(fd):
        real_fsync(fd)
        if once.acquire(blocking=False):
            os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    os.fsync = fsync
    sys.exit(_cli.main(sys.argv[2:]))
    """
)


def _render_example(
    command: list[str], job_dir: Path, cwd: Path, **options: Any
) -> subprocess.CompletedProcess[str]:
    """``command`` (the CLI, or a Python that runs it) rendering the bundled example."""
    return subprocess.run(
        [
            *command,
            "render",
            str(helpers.EXAMPLE),
            "--benchmark",
            "aime25",
            "--job-dir",
            str(job_dir),
        ],
        cwd=cwd,
        env=helpers.cli_env(OTEL_TOKEN="t"),
        capture_output=True,
        text=True,
        timeout=120,
        **options,
    )


def _render_with_signal(name: str, job_dir: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _render_example([sys.executable, "-c", _SIGNAL_DURING_WRITE, name], job_dir, cwd)


def test_sigterm_during_the_write_leaves_nothing(tmp_path: Path) -> None:
    job_dir = tmp_path / "runs" / "gym-1" / "aime25"
    result = _render_with_signal("SIGTERM", job_dir, tmp_path)
    assert result.returncode == 128 + signal.SIGTERM, result.stderr
    assert "Traceback" not in result.stderr
    assert helpers.tree(tmp_path) == set()


def test_after_sigkill_the_next_write_removes_the_stale_temporaries(tmp_path: Path) -> None:
    job_dir = tmp_path / "runs" / "gym-1" / "aime25"
    otel = job_dir / "otel"
    killed = _render_with_signal("SIGKILL", job_dir, tmp_path)
    assert killed.returncode == -signal.SIGKILL
    # The files are written at once (collector.yaml and its companions: the drain config and the
    # step's two cuts): killed at the first fsync, some or all of their temporaries exist.
    stale = sorted(otel.iterdir())
    assert stale, "the write was killed before any temporary existed"
    assert {p.name.split(".")[1] for p in stale} <= {"collector", *COMPANIONS}, stale
    (pid,) = {killed_pid(p) for p in stale}  # all the killed process's
    host = socket.gethostname()
    others = [  # not ours to remove: a live process, another host
        otel / f".collector.yaml.{host}.{os.getpid()}.0000.tmp",
        otel / f".drain.yaml.other-node.{pid}.0000.tmp",
    ]
    for other in others:
        other.write_text("partial", encoding="utf-8")
    result = helpers.run_cli(
        "render",
        helpers.EXAMPLE,
        "--benchmark",
        "aime25",
        "--job-dir",
        job_dir,
        cwd=tmp_path,
        env=helpers.cli_env(OTEL_TOKEN="t"),
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in otel.iterdir()) == sorted(
        ["collector.yaml", *(f"{name}.yaml" for name in COMPANIONS), *(o.name for o in others)]
    )


def killed_pid(temporary: Path) -> str:
    return temporary.name.removesuffix(".tmp").rsplit(".", 2)[1]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_the_written_file_gets_the_umask_permissions(tmp_path: Path, umask: int, mode: int) -> None:
    job_dir = tmp_path / "runs" / "gym-1" / "aime25"
    result = _render_example(
        [str(helpers.CLI)], job_dir, tmp_path, preexec_fn=lambda: os.umask(umask)
    )
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE((job_dir / "otel" / "collector.yaml").stat().st_mode) == mode


# -- class 3: API arguments of the wrong kind ----------------------------------------------------


@pytest.mark.parametrize(
    ("benchmark", "job_dir", "path"),
    [
        (5, "/r/gym-1/aime25", "benchmark_name"),
        (None, "/r/gym-1/aime25", "benchmark_name"),
        ("aime25", 5, "remote_bench_dir"),
        ("aime25", b"/r/gym-1/aime25", "remote_bench_dir"),
        ("aime25", "/r/gym-1/aime\x0025", "remote_bench_dir"),
    ],
)
def test_api_arguments_of_the_wrong_kind_raise_the_package_error(
    benchmark: object, job_dir: object, path: str
) -> None:
    config = SubmitConfig.from_dict(_example())
    with pytest.raises(SubmitConfigError) as caught:
        render_collector_config(config, benchmark, job_dir)  # type: ignore[arg-type]
    assert caught.value.path == path


def test_a_deep_mapping_built_in_python_raises_the_package_error() -> None:
    mapping = _example()
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    mapping["driver"]["benchmarks"]["aime25"] = deep
    with pytest.raises(SubmitConfigError) as caught:
        SubmitConfig.from_dict(mapping)
    assert "nests deeper than" in caught.value.message


@pytest.mark.parametrize("character", ["*", "?", "[", "\\"])
def test_a_job_directory_the_targets_glob_would_misread_is_refused(character: str) -> None:
    """Prometheus reads the targets files' paths as glob patterns."""
    config = SubmitConfig.from_dict(_example())
    with pytest.raises(SubmitConfigError) as caught:
        render_collector_config(config, "aime25", f"/r/run{character}1/gym-1/aime25")
    assert caught.value.path == "remote_bench_dir"
    assert f"contains {character!r}, which the collector reads as a wildcard" in str(caught.value)
