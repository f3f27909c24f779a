"""What the tests share: the repository's files, rendering every line x combination, and the CLI.

Imported as a module (``from support import helpers``), so a reader sees where each name comes
from. The
repository root is defined here and nowhere else; the benchmarks import it too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import yaml

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import collector_step_script, render_collector_config
from nemo_gym.orchestration.executors.otel._render.verdicts import asking_for, line_variants
from nemo_gym.orchestration.executors.otel._templating.catalogue import search_path, template_set

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
CONFIGS = DATA / "configs"
EXPOSITIONS = DATA / "expositions"  # what the DCGM exporter, node_exporter and vLLM serve
EXAMPLE = REPO / "examples" / "submit.yaml"
COMBINATIONS = ("otlp_http+file", "otlp_http", "file")


def load_mapping(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def fixture_configs() -> dict[str, Path]:
    """Every submit config the golden and property tests render, by a short name."""
    return {"example": EXAMPLE, **{p.stem: p for p in sorted(CONFIGS.glob("*.yaml"))}}


# -- template lines ----------------------------------------------------------------------------


ONE_PROCESSOR = """receivers:
  otlp:
    protocols:
      grpc:
processors:
  {kind}/x:
{body}
exporters:
  debug:
service:
  telemetry: {{metrics: {{level: none}}}}
  pipelines:
    {signal}:
      receivers: [otlp]
      processors: [{kind}/x]
      exporters: [debug]
"""


def unavailable(message: str) -> NoReturn:
    """A test that cannot run here (no Go, no module cache, no cluster): skipped on a
    developer's machine, failed under ``CI=true``, where everything it needs is set up."""
    import pytest  # here, not at the top: the benchmarks import this module without pytest

    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def one_processor_config(kind: str, body: str, signal: str) -> str:
    """A collector config with one processor ``<kind>/x`` of ``body`` (YAML, unindented) in a
    ``signal`` pipeline between ``otlp`` and ``debug``: a processor's own rules in isolation."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    return ONE_PROCESSOR.format(kind=kind, body=indented, signal=signal)


def line_metadata() -> dict[str, dict[str, Any]]:
    """Each built-in line's ``line.yaml``, by line name: the one place a line is described."""
    return {
        path.parent.name: load_mapping(path)
        for path in sorted((REPO / "templates").glob("*/line.yaml"))
    }


# Each built-in line's signal file suffix, as the tests expect it: the current line's collectors
# (v0.154.0 on) write standard zstd streams, the legacy line's JSON lines.
FILE_SUFFIXES = {"current": ".jsonl.zst", "legacy": ".jsonl"}


def line_versions() -> dict[str, str]:
    """Each built-in line and the lowest collector release its ``line.yaml`` claims."""
    return {name: str(meta["collector_min"]) for name, meta in line_metadata().items()}


def backend_types() -> frozenset[str]:
    """The OTLP/HTTP exporter's type name in each built-in line (``line.yaml``'s ``names``)."""
    return frozenset(meta["names"]["otlp_http"] for meta in line_metadata().values())


def exports_to_backend(exporter_id: str, line: str | None = None) -> bool:
    """Whether ``exporter_id`` is the backend's OTLP/HTTP exporter, in ``line`` or any line:
    the one answer the rendered-contract, pipeline-graph and tenant-run tests share."""
    types = backend_types() if line is None else {line_metadata()[line]["names"]["otlp_http"]}
    return exporter_id.split("/")[0] in types


LINE_YAML = "collector_min: {low}\ncollector_max: {high}\nschema: {schema}\nnames:\n{names}"
LEGACY_NAMES = "  otlp_http: otlphttp\n  span_metrics: spanmetrics\n"


def add_line(
    root: Path,
    name: str,
    low: str,
    high: str,
    schema: str = "collector-legacy.schema.json",
    names: str = LEGACY_NAMES,
) -> None:
    """A template line added by override under ``root``: its line.yaml and the three
    combinations, each only naming its destinations and extending the shared skeleton."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "line.yaml").write_text(
        LINE_YAML.format(low=low, high=high, schema=schema, names=names), encoding="utf-8"
    )
    for combination in COMBINATIONS:
        destinations = combination.split("+")
        (folder / f"{combination}.yaml.j2").write_text(
            "{#- nemo-gym-otel\ntemplate_version: older-1\nrequires_package: 0.1.0\n-#}\n"
            '{% extends "_base/collector.yaml.j2" %}\n'
            f"{{% set destinations = {destinations!r} %}}\n".replace("'", '"'),
            encoding="utf-8",
        )


def variants(config: SubmitConfig) -> Iterator[tuple[str, str, SubmitConfig]]:
    """(line, combination, ``config`` asking for it): the package's own matrix, the one
    ``check`` renders, over the built-in lines."""
    for line in template_set(search_path()).lines.values():
        for combination, variant in line_variants(config, line):
            yield line.name, combination, variant


def variant(config: SubmitConfig, collector_version: str, combination: str) -> SubmitConfig:
    """``config`` asking for ``combination`` for a collector of ``collector_version``."""
    return asking_for(config, combination, collector_version)


def job_dir(config: SubmitConfig, benchmark: str, gym_job_id: str = "gym-20261202-0001") -> str:
    return f"{config.job.output_path}/{gym_job_id}/{benchmark}"


def render_variants(config: SubmitConfig) -> Iterator[tuple[str, str, str]]:
    """(line, combination, rendered YAML) for the config's first benchmark."""
    benchmark = next(iter(config.driver.benchmarks))
    for line, combination, variant_config in variants(config):
        yield (
            line,
            combination,
            render_collector_config(variant_config, benchmark, job_dir(config, benchmark)),
        )


# -- the console script, run the way a user does ------------------------------------------------
# Through a subprocess, not main(): exit codes, stderr and the absence of a traceback are what a
# user sees, and only a real process shows them.

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


def rendered_job_dir(parent: Path, **otel: Any) -> tuple[Path, str]:
    """The bundled example (its ``otel`` keys changed by ``otel``) rendered by the CLI into
    ``<parent>/runs/gym-demo/aime25``, and the job step's fragment for it."""
    mapping = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    mapping["otel"].update(otel)
    config = parent / "submit.yaml"
    config.write_text(yaml.safe_dump(mapping), encoding="utf-8")
    job_dir = parent / "runs" / "gym-demo" / "aime25"
    result = run_cli("render", config, "--benchmark", "aime25", "--job-dir", job_dir, cwd=parent)
    assert result.returncode == 0, result.stderr
    fragment = collector_step_script(SubmitConfig.from_dict(mapping), "aime25", job_dir)
    return job_dir, fragment


def rendered_example(cwd: Path, *extra: str | os.PathLike[str]) -> str:
    """``render --stdout`` of the bundled example's first benchmark (``extra``: more flags)."""
    result = run_cli(
        "render",
        EXAMPLE,
        "--benchmark",
        "aime25",
        "--job-dir",
        "/runs/g1/aime25",
        "--stdout",
        *extra,
        cwd=cwd,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


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


def case_header(text: str) -> dict[str, Any]:
    """What a data-file case expects, written as YAML behind ``#: `` in its header."""
    lines = [line[3:] for line in text.splitlines() if line.startswith("#: ")]
    return yaml.safe_load("\n".join(lines)) or {}


def staged_submit_case(case: Path, tmp_path: Path, expected: dict[str, Any]) -> tuple[Path, str]:
    """A submit-config case copied into ``tmp_path/configs`` and the ``--job-dir`` it renders
    to (``job_dir`` of its header, ``{tmp}`` standing for ``tmp_path``)."""
    config = tmp_path / "configs" / case.name
    config.parent.mkdir()
    shutil.copyfile(case, config)
    job_dir = expected.get("job_dir", "{tmp}/runs/gym-1/aime25").replace("{tmp}", str(tmp_path))
    return config, job_dir


def run_readme_files_example(index: int, job_dir: Path) -> str:
    """The output of the README's ``index``-th bash example under "The job's files", run as
    written (``pipefail``, so a failing reader fails it) with ``JOB_DIR`` set to ``job_dir``."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The job's files\n", 1)[1].split("\n## ", 1)[0]
    example = re.findall(r"```bash\n(.*?)\n```", section, flags=re.DOTALL)[index]
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", example],
        env={**os.environ, "JOB_DIR": str(job_dir)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
