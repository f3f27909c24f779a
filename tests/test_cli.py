"""The ``nemo-gym-otel`` command, every subcommand, through the installed console script.

Expected values come from the SPEC, the README and docs/ (exit codes 0/1/2, ``<path>: <message>``
lines on stderr, the example's keys), not from the command's own output.
"""

from __future__ import annotations

import json
import shlex
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from support import helpers

EXAMPLE = helpers.REPO / "examples" / "submit.yaml"
TOKEN = "token-value-for-cli-tests"
SIGNALS = ("traces", "metrics", "logs")
# docs/guide/template-lines.md, "Lines".
LINES = {"legacy": ("0.130.0", "0.154.0"), "current": ("0.154.0", None)}
COMBINATIONS = {"otlp_http+file", "otlp_http", "file"}
# SPEC section 2, driver_telemetry_env.
TELEMETRY_ENV = {
    "NEMO_GYM_OTEL_ENABLED": "1",
    "NEMO_GYM_OTEL_SPAN_GROUPS": "default,verify",
    "NEMO_GYM_OTEL_LOGS_ENABLED": "1",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://localhost:4317",
}


def write_config(folder: Path, mapping: dict, name: str = "submit.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(mapping, sort_keys=False), encoding="utf-8")
    return path


def render(config: Path, job_dir: Path, *extra: str, env: dict | None = None):
    return helpers.run_cli(
        "render",
        config,
        "--benchmark",
        job_dir.name,
        "--job-dir",
        job_dir,
        *extra,
        cwd=job_dir.parents[2],
        env=helpers.cli_env(OTEL_TOKEN=TOKEN) if env is None else env,
    )


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "gym-demo" / "aime25"


@pytest.fixture
def example(example_mapping: dict, job_dir: Path) -> Path:
    """The bundled example with job.output_path where the tests' job directories are, so a
    rendering has nothing to warn about (<output_path>/<gym_job_id>/<benchmark>)."""
    example_mapping["job"]["output_path"] = str(job_dir.parents[1])
    return write_config(job_dir.parents[2], example_mapping)


# -- render ---------------------------------------------------------------------------------


def test_render_writes_the_checked_config_and_prints_its_path(example: Path, job_dir: Path) -> None:
    result = render(example, job_dir)

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    target = job_dir / "otel" / "collector.yaml"
    assert result.stdout == f"{target}\n"
    assert helpers.tree(job_dir.parents[2]) == {
        "submit.yaml",
        "runs",
        "runs/gym-demo",
        "runs/gym-demo/aime25",
        "runs/gym-demo/aime25/otel",
        "runs/gym-demo/aime25/otel/collector.yaml",
        "runs/gym-demo/aime25/otel/drain.yaml",  # the backend's queue is on disk
        "runs/gym-demo/aime25/otel/ingest.yaml",  # and the step runs its backend path apart
        "runs/gym-demo/aime25/otel/sender.yaml",
    }, "the atomic write leaves no temporary file behind"
    text = target.read_text(encoding="utf-8")
    first, second = text.splitlines()[:2]
    assert f"nemo-gym-otel {version('nemo-gym-otel')}" in first
    assert "current/otlp_http+file" in second, "newest line, default exporters"
    assert TOKEN not in text and "${env:OTEL_TOKEN}" in text
    parsed = yaml.safe_load(text)
    attributes = {
        a["key"]: a["value"]
        for a in parsed["processors"]["resource/job"]["attributes"]
        if "value" in a
    }
    assert attributes == {
        "service.name": "nemo-gym-eval",
        "user": "gym-user",  # LOGNAME, pinned by conftest
        "run_id": "gym-demo",
        "slurm_job_id": "${env:SLURM_JOB_ID}",
        "benchmark": "aime25",
        "cluster": "eos",
        "model": "qwen3-30b-a3b",
    }
    assert parsed["exporters"]["otlp_http/backend"]["endpoint"] == (
        "https://otlp.observability.example.internal"
    )
    for signal in SIGNALS:
        assert parsed["exporters"][f"file/{signal}"]["path"] == f"{job_dir}/otel/{signal}.jsonl.zst"


def test_render_says_nothing_of_an_unset_token(example: Path, job_dir: Path) -> None:
    """Rendering never reads the token; the submitting side and the job's step require it."""
    result = render(example, job_dir, env=helpers.cli_env(OTEL_TOKEN=None))

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert (job_dir / "otel" / "collector.yaml").is_file()


def test_render_warns_once_of_a_token_the_backend_would_get_changed(
    example: Path, job_dir: Path
) -> None:
    token = "00123456789"  # YAML reads it as a number: the leading zeros would be lost
    result = render(example, job_dir, env=helpers.cli_env(OTEL_TOKEN=token))

    assert result.returncode == 0, result.stderr
    (warning,) = result.stderr.splitlines()
    assert warning.startswith(helpers.WARNING) and "OTEL_TOKEN" in warning
    assert "unchanged" in warning and token not in warning
    assert (job_dir / "otel" / "collector.yaml").is_file()


def test_render_with_files_only_needs_no_token_and_never_names_it(
    example_mapping: dict, job_dir: Path
) -> None:
    example_mapping["otel"] = {"exporters": ["file"]}  # no endpoint, no service name
    example_mapping["job"]["output_path"] = str(job_dir.parents[1])
    config = write_config(job_dir.parents[2], example_mapping)

    result = render(config, job_dir, env=helpers.cli_env(OTEL_TOKEN=None))

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    text = (job_dir / "otel" / "collector.yaml").read_text(encoding="utf-8")
    assert "OTEL_TOKEN" not in text and "Authorization" not in text
    assert "file/traces" in yaml.safe_load(text)["exporters"]


def test_render_stdout_prints_the_same_yaml_and_writes_nothing(job_dir: Path) -> None:
    root = job_dir.parents[2]
    before = helpers.tree(root)

    printed = render(EXAMPLE, job_dir, "--stdout")

    assert printed.returncode == 0, printed.stderr
    assert helpers.tree(root) == before
    assert yaml.safe_load(printed.stdout)["exporters"]["file/logs"]["path"] == (
        f"{job_dir}/otel/logs.jsonl.zst"
    )
    written = render(EXAMPLE, job_dir)
    assert written.returncode == 0, written.stderr
    assert (job_dir / "otel" / "collector.yaml").read_text(encoding="utf-8") == printed.stdout


@pytest.mark.parametrize("command", ["render", "env"])
def test_a_missing_config_file_is_one_error_naming_it(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "nowhere.yaml"
    args = {
        "render": ["--benchmark", "aime25", "--job-dir", tmp_path / "runs" / "g" / "aime25"],
        "env": ["--gym-job-id", "gym-1"],
    }[command]

    result = helpers.run_cli(command, missing, *args, cwd=tmp_path)

    assert result.returncode == 1
    (message,) = helpers.error_lines(result.stderr)
    assert message.startswith(f"{missing}: ") and "cannot read" in message
    assert helpers.tree(tmp_path) == set()


# -- validate -------------------------------------------------------------------------------


@pytest.fixture
def rendered(job_dir: Path) -> Path:
    assert render(EXAMPLE, job_dir).returncode == 0
    return job_dir / "otel" / "collector.yaml"


def test_validate_accepts_a_rendered_config(rendered: Path) -> None:
    result = helpers.run_cli("validate", rendered, cwd=rendered.parent)

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{rendered}: valid\n"
    assert result.stderr == ""


def test_validate_reports_each_violation_as_yaml_path_and_message(
    rendered: Path, tmp_path: Path
) -> None:
    parsed = yaml.safe_load(rendered.read_text(encoding="utf-8"))
    del parsed["exporters"]["otlp_http/backend"]["endpoint"]
    traces = parsed["exporters"]["file/traces"]
    traces["pathh"] = traces.pop("path")
    broken = write_config(tmp_path, parsed, "collector.yaml")

    result = helpers.run_cli("validate", broken, cwd=tmp_path)

    assert result.returncode == 1
    assert result.stdout == ""
    messages = dict(line.split(": ", 1) for line in helpers.error_lines(result.stderr))
    assert set(messages) == {
        "exporters.otlp_http/backend.endpoint",
        "exporters.file/traces.path",
        "exporters.file/traces.pathh",
    }
    assert "did you mean 'path'" in messages["exporters.file/traces.pathh"]


def test_validate_reports_graph_violations(rendered: Path, tmp_path: Path) -> None:
    parsed = yaml.safe_load(rendered.read_text(encoding="utf-8"))
    parsed["service"]["pipelines"]["traces/backend"]["exporters"] = ["otlp_http/elsewhere"]
    broken = write_config(tmp_path, parsed, "collector.yaml")

    result = helpers.run_cli("validate", broken, cwd=tmp_path)

    assert result.returncode == 1
    (message,) = helpers.error_lines(result.stderr)
    assert message.startswith("service.pipelines.traces/backend.exporters.otlp_http/elsewhere: ")
    assert "not defined" in message


def test_validate_checks_against_the_line_of_the_collector_version(
    example_mapping: dict, job_dir: Path
) -> None:
    example_mapping["otel"]["collector_version"] = "0.141.0"  # legacy: otlphttp, spanmetrics
    render(write_config(job_dir.parents[2], example_mapping), job_dir)
    legacy = job_dir / "otel" / "collector.yaml"

    assert (
        helpers.run_cli(
            "validate", legacy, "--collector-version", "0.141.0", cwd=job_dir
        ).returncode
        == 0
    )
    # The current line's collectors still load the old names: a warning each, naming the new
    # name, and no error (issue 18).
    against_current = helpers.run_cli("validate", legacy, cwd=job_dir)
    assert against_current.returncode == 0, against_current.stderr
    warned = [
        line.removeprefix(f"{helpers.WARNING}{legacy}: ")
        for line in against_current.stderr.splitlines()
        if line.startswith(helpers.WARNING)
    ]
    assert {line.split(": ", 1)[0] for line in warned} == {
        "connectors.spanmetrics",
        "exporters.otlphttp/queue",
        "exporters.otlphttp/backend",
    }, against_current.stderr
    assert any("'span_metrics'" in line for line in warned)
    assert any("'otlp_http/backend'" in line for line in warned)
    assert helpers.ERROR not in against_current.stderr
    lines = against_current.stderr.splitlines()  # every warning names the file first
    assert all(line.startswith(f"{helpers.WARNING}{legacy}: ") for line in lines), lines


@pytest.mark.parametrize(
    ("collector_version", "says"),
    [("0.100.0", "legacy: >=0.130.0, <0.154.0; current: >=0.154.0"), ("latest", "0.161.0")],
)
def test_validate_names_the_collector_version_flag(
    rendered: Path, collector_version: str, says: str
) -> None:
    result = helpers.run_cli(
        "validate", rendered, "--collector-version", collector_version, cwd=rendered.parent
    )

    assert result.returncode == 1
    (message,) = helpers.error_lines(result.stderr)
    assert message.startswith("--collector-version: ") and says in message


def test_validate_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    broken = tmp_path / "collector.yaml"
    broken.write_text("receivers:\n  otlp: protocols: {}\n", encoding="utf-8")

    result = helpers.run_cli("validate", broken, cwd=tmp_path)

    assert result.returncode == 1
    (message,) = helpers.error_lines(result.stderr)
    assert message.startswith(f"{broken}:2: ")


def test_validate_a_missing_file(tmp_path: Path) -> None:
    result = helpers.run_cli("validate", "absent.yaml", cwd=tmp_path)

    assert result.returncode == 1
    (message,) = helpers.error_lines(result.stderr)
    assert message.startswith("absent.yaml: ") and "cannot read" in message


# -- templates ------------------------------------------------------------------------------


def test_templates_lists_lines_ranges_and_combinations(tmp_path: Path) -> None:
    result = helpers.run_cli("templates", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines()}
    assert set(rows) == set(LINES)
    for name, (low, high) in LINES.items():
        assert f">={low}" in rows[name]
        assert (f"<{high}" in rows[name]) if high else ("<" not in rows[name])
        assert all(combination in rows[name] for combination in COMBINATIONS)


def test_templates_json(tmp_path: Path) -> None:
    result = helpers.run_cli("templates", "--format", "json", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert isinstance(rows, list)
    for row in rows:
        assert set(row) == {"line", "min_collector", "max_collector", "combinations", "origins"}
    assert {r["line"]: (r["min_collector"], r["max_collector"]) for r in rows} == LINES
    assert all(set(r["combinations"]) == COMBINATIONS for r in rows)
    assert all(r["origins"] == dict.fromkeys(sorted(COMBINATIONS), "built-in") for r in rows)


# -- env ------------------------------------------------------------------------------------


@pytest.fixture
def env_config(example_mapping: dict, tmp_path: Path) -> Path:
    example_mapping["driver"]["env"] = {
        "NEMO_GYM_LOG_LEVEL": "lit:INFO",
        "WANDB_API_KEY": "host:WANDB_API_KEY",
        "SCRATCH": "runtime:SLURM_TMPDIR",
        "RUN_NOTE": "lit:two words, 'quoted' & $HOME",
    }
    return write_config(tmp_path, example_mapping)


def shell_assignments(stdout: str) -> dict[str, str]:
    """``NAME=value`` lines, each one shell word, so ``eval`` or ``source`` reads them back."""
    words = [shlex.split(line) for line in stdout.splitlines()]
    assert all(len(w) == 1 for w in words), stdout
    return dict(w[0].split("=", 1) for w in words)


@pytest.mark.parametrize(
    ("flags", "parse"),
    [([], shell_assignments), (["--format", "json"], json.loads)],
    ids=["plain", "json"],
)
def test_env_prints_the_merged_driver_env(
    env_config: Path, tmp_path: Path, flags: list[str], parse
) -> None:
    result = helpers.run_cli(
        "env",
        env_config,
        "--gym-job-id",
        "gym-20261202-0001",
        *flags,
        cwd=tmp_path,
        env=helpers.cli_env(WANDB_API_KEY="wandb-from-the-host"),
    )

    assert result.returncode == 0, result.stderr
    assert parse(result.stdout) == {
        **TELEMETRY_ENV,
        "NEMO_GYM_OTEL_RUN_ID": "gym-20261202-0001",
        "NEMO_GYM_LOG_LEVEL": "INFO",
        "WANDB_API_KEY": "wandb-from-the-host",
        "SCRATCH": "${SLURM_TMPDIR}",
        "RUN_NOTE": "two words, 'quoted' & $HOME",
    }


def test_env_without_gym_telemetry_is_driver_env_only(
    example_mapping: dict, tmp_path: Path
) -> None:
    example_mapping["otel"]["gym_telemetry"] = False
    example_mapping["driver"]["env"] = {"NEMO_GYM_LOG_LEVEL": "lit:DEBUG"}
    config = write_config(tmp_path, example_mapping)

    result = helpers.run_cli(
        "env", config, "--gym-job-id", "gym-7", "--format", "json", cwd=tmp_path
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"NEMO_GYM_LOG_LEVEL": "DEBUG"}


def test_env_with_an_unset_host_variable_names_the_key(env_config: Path, tmp_path: Path) -> None:
    result = helpers.run_cli(
        "env",
        env_config,
        "--gym-job-id",
        "gym-7",
        cwd=tmp_path,
        env=helpers.cli_env(WANDB_API_KEY=None),
    )

    assert result.returncode == 1
    assert result.stdout == ""
    (message,) = helpers.error_lines(result.stderr)
    assert message.startswith("driver.env.WANDB_API_KEY: ") and "export WANDB_API_KEY" in message


# -- check ----------------------------------------------------------------------------------


def ok_lines(config_label: str) -> set[str]:
    """Each rendering says where its template came from (issue 17)."""
    return {f"ok {config_label}: {line}/{c} (built-in)" for line in LINES for c in COMBINATIONS}


def test_check_passes_on_the_builtin_templates(tmp_path: Path) -> None:
    result = helpers.run_cli("check", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert set(result.stdout.splitlines()) == ok_lines("bundled example")
    assert result.stderr == ""
    assert helpers.tree(tmp_path) == set()


def test_check_renders_the_configs_it_is_given(tmp_path: Path) -> None:
    configs = [helpers.CONFIGS / "minimal.yaml", helpers.CONFIGS / "disaggregated.yaml"]

    result = helpers.run_cli("check", *configs, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    expected = ok_lines("bundled example").union(*(ok_lines(str(c)) for c in configs))
    assert set(result.stdout.splitlines()) == expected


def test_check_fails_on_an_invalid_config(tmp_path: Path) -> None:
    broken = helpers.REPO / "tests" / "data" / "malformed" / "02-unknown-otel-key.yaml"

    result = helpers.run_cli("check", broken, cwd=tmp_path)

    assert result.returncode == 1
    assert set(result.stdout.splitlines()) == ok_lines("bundled example")
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert errors == [
        f"nemo-gym-otel: error: {broken}: otel.endpont: unknown key; did you mean 'endpoint'?"
    ]


OVERRIDE_FRONT_MATTER = """\
{#- nemo-gym-otel
template_version: broken-1
requires_package: 0.1.0
-#}
{% extends "builtin/current/file.yaml.j2" %}
"""


@pytest.mark.parametrize(
    ("block", "names"),
    [
        # Renders, but the collector has no log level "loud": the schema check catches it.
        (
            "{% block telemetry %}\n    logs:\n      level: loud\n{% endblock %}\n",
            "service.telemetry.logs.level: ",
        ),
        # Does not even compile: the error names the template and its line.
        ("{% block telemetry %}\n    {{ 1 + }}\n{% endblock %}\n", "current/file.yaml.j2:7"),
    ],
    ids=["schema-violation", "template-syntax-error"],
)
def test_check_fails_on_a_broken_override(tmp_path: Path, block: str, names: str) -> None:
    overrides = tmp_path / "platform-templates"
    (overrides / "current").mkdir(parents=True)
    (overrides / "current" / "file.yaml.j2").write_text(
        OVERRIDE_FRONT_MATTER + block, encoding="utf-8"
    )

    result = helpers.run_cli("check", "--template-dir", overrides, cwd=tmp_path)

    assert result.returncode == 1
    assert set(result.stdout.splitlines()) == ok_lines("bundled example") - {
        "ok bundled example: current/file (built-in)"
    }
    (problem,) = helpers.error_lines(
        result.stderr.replace("nemo-gym-otel: 1 problem(s) found\n", "")
    )
    assert problem.startswith("bundled example: current/file: ") and names in problem


def test_check_with_a_missing_template_dir(tmp_path: Path) -> None:
    result = helpers.run_cli("check", "--template-dir", tmp_path / "absent", cwd=tmp_path)

    assert result.returncode == 1
    (message,) = helpers.error_lines(result.stderr)
    assert message.startswith(f"{tmp_path / 'absent'}: ") and "--template-dir" in message


# -- usage ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["bogus"],
        ["render"],
        ["render", str(EXAMPLE), "--benchmark", "aime25"],
        ["render", str(EXAMPLE), "--job-dir", "/runs/g/aime25", "--bogus"],
        ["validate"],
        ["templates", "--yaml"],
        ["env", str(EXAMPLE)],
        ["check", "--template-dir"],
    ],
    ids=lambda a: " ".join(a) or "no-arguments",
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    result = helpers.run_cli(*args, cwd=tmp_path)

    assert result.returncode == 2
    assert result.stdout == ""
    assert "usage: nemo-gym-otel" in result.stderr
    assert helpers.tree(tmp_path) == set()


def test_help_lists_every_subcommand(tmp_path: Path) -> None:
    result = helpers.run_cli("--help", cwd=tmp_path)

    assert result.returncode == 0
    for command in ("render", "validate", "templates", "env", "check"):
        assert command in result.stdout


# -- issue 17: which file, which folder, what does nothing ---------------------------------------


def test_validate_with_several_files_prefixes_every_message_with_its_file(
    rendered: Path, tmp_path: Path
) -> None:
    parsed = yaml.safe_load(rendered.read_text(encoding="utf-8"))
    parsed["service"]["pipelines"]["traces/backend"]["exporters"] = ["debug"]
    first = write_config(tmp_path, parsed, "a.yaml")
    (tmp_path / "b.yaml").write_text("receivers: [\n", encoding="utf-8")  # a syntax error
    parsed["processors"]["filter/unused"] = {"error_mode": "ignore"}
    del parsed["service"]["pipelines"]["traces/backend"]
    third = write_config(tmp_path, parsed, "c.yaml")

    result = helpers.run_cli("validate", first, tmp_path / "b.yaml", third, rendered, cwd=tmp_path)

    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines and all(
        line.startswith((f"{helpers.ERROR}{first}: ", f"{helpers.ERROR}{tmp_path / 'b.yaml'}:"))
        or line.startswith(f"{helpers.WARNING}{third}: ")
        for line in lines
    ), lines
    assert f"{helpers.ERROR}{first}: service.pipelines.traces/backend.exporters.debug: " in (
        result.stderr
    ), "named by its id, not its list position"
    assert f"{helpers.WARNING}{third}: processors.filter/unused: " in result.stderr
    assert result.stdout.splitlines() == [f"{third}: valid", f"{rendered}: valid"]


def test_validate_of_one_file_warns_of_what_does_nothing(rendered: Path, tmp_path: Path) -> None:
    parsed = yaml.safe_load(rendered.read_text(encoding="utf-8"))
    parsed["processors"]["filter/unused"] = {"error_mode": "ignore"}
    config = write_config(tmp_path, parsed, "collector.yaml")

    result = helpers.run_cli("validate", config, "--format", "json", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    (judged,) = json.loads(result.stdout)
    assert judged["valid"] and [w["path"] for w in judged["warnings"]] == [
        "processors.filter/unused"
    ]


def _override(tmp_path: Path, block: str) -> Path:
    overrides = tmp_path / "platform-templates"
    (overrides / "current").mkdir(parents=True)
    (overrides / "current" / "file.yaml.j2").write_text(
        OVERRIDE_FRONT_MATTER + block, encoding="utf-8"
    )
    return overrides


def test_check_and_templates_say_which_folder_each_rendering_came_from(tmp_path: Path) -> None:
    telemetry = "{% block telemetry %}\n    logs:\n      level: info\n    metrics:\n      level: none\n{% endblock %}\n"
    overrides = _override(tmp_path, telemetry)

    checked = helpers.run_cli("check", "--template-dir", overrides, cwd=tmp_path)
    listed = helpers.run_cli("templates", "--template-dir", overrides, cwd=tmp_path)
    as_json = helpers.run_cli(
        "templates", "--format", "json", "--template-dir", overrides, cwd=tmp_path
    )

    assert checked.returncode == 0, checked.stderr
    assert f"ok bundled example: current/file (override {overrides})" in checked.stdout.splitlines()
    assert "ok bundled example: current/otlp_http (built-in)" in checked.stdout.splitlines()
    current = next(line for line in listed.stdout.splitlines() if line.startswith("current"))
    assert f"file (override {overrides})" in current and "otlp_http (built-in)" in current
    origins = {row["line"]: row["origins"] for row in json.loads(as_json.stdout)}
    assert origins["current"]["file"] == str(overrides)
    assert origins["legacy"]["file"] == "built-in"


def test_check_warns_of_a_component_no_pipeline_uses(tmp_path: Path) -> None:
    processors = (
        "{% block processors %}{{ super() }}  filter/drop_debug:\n    error_mode: ignore\n"
        "{% endblock %}\n"
    )
    overrides = _override(tmp_path, processors)

    result = helpers.run_cli("check", "--template-dir", overrides, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    (warning,) = result.stderr.splitlines()
    assert (
        warning.startswith(
            f"{helpers.WARNING}bundled example: current/file: processors.filter/drop_debug: "
        )
        and "no pipeline uses it" in warning
    )


def test_a_template_folder_that_contributes_nothing_is_an_error(tmp_path: Path) -> None:
    line_folder = tmp_path / "templates" / "current"  # passed instead of templates/
    line_folder.mkdir(parents=True)
    (line_folder / "file.yaml.j2").write_text(OVERRIDE_FRONT_MATTER, encoding="utf-8")

    for command in (["check"], ["templates"], ["validate", helpers.EXAMPLE]):
        result = helpers.run_cli(*command, "--template-dir", line_folder, cwd=tmp_path)
        assert result.returncode == 1, command
        (message,) = helpers.error_lines(result.stderr)
        assert message.startswith(f"{line_folder}: contributes no template"), message
