"""The wheel, installed into a fresh virtual environment, renders from outside the checkout.

This proves that templates/, schemas/ and the bundled example travel inside the wheel and are
found through importlib.resources, never through a path into the checkout. It takes a few
seconds (a build and a venv) and runs in the normal test run.

Offline by design: the wheel is built with ``--no-isolation`` (hatchling comes with the test
extras) and installed with ``--no-deps --no-index``. For jinja2, PyYAML and jsonschema the new
venv reads this environment's site folders through a ``.pth`` file, after its own; the test
checks that the package itself, and its templates, are imported from the new venv.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from support import helpers

pytestmark = pytest.mark.slow

PACKAGE = "nemo_gym/orchestration/executors/otel"


def _run(*args: str | Path, cwd: Path) -> str:
    result = subprocess.run(
        list(map(str, args)),
        cwd=cwd,
        env=helpers.cli_env(PYTHONPATH=None),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    _run(
        sys.executable,
        "-m",
        "build",
        "--wheel",
        "--no-isolation",
        "--outdir",
        dist,
        helpers.REPO,
        cwd=dist,
    )
    (built,) = dist.glob("nemo_gym_otel-*-py3-none-any.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("venv") / "venv"
    _run(sys.executable, "-m", "venv", root, cwd=root.parent)
    python = root / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel, cwd=root.parent)
    purelib = _run(
        python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=root.parent
    )
    # Every site folder this process imports from (a .pth in a borrowed folder is not read).
    ours = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    (Path(purelib.strip()) / "_borrowed_dependencies.pth").write_text(
        "".join(f"{p}\n" for p in ours), encoding="utf-8"
    )
    return root


def test_wheel_holds_the_resources_and_no_namespace_init(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        f"{PACKAGE}/__init__.py",
        f"{PACKAGE}/py.typed",
        f"{PACKAGE}/templates/_base/collector.yaml.j2",
        f"{PACKAGE}/examples/submit.yaml",
        f"{PACKAGE}/schemas/submit-config.schema.json",
    ):
        assert required in names, required
    for step_template in (helpers.REPO / "templates" / "_step").iterdir():  # the job step's bash
        assert f"{PACKAGE}/templates/_step/{step_template.name}" in names
    for line, meta in helpers.line_metadata().items():
        assert f"{PACKAGE}/templates/{line}/line.yaml" in names
        assert f"{PACKAGE}/schemas/{meta['schema']}" in names
        for combination in helpers.COMBINATIONS:
            assert f"{PACKAGE}/templates/{line}/{combination}.yaml.j2" in names
    for namespace in ("nemo_gym", "nemo_gym/orchestration", "nemo_gym/orchestration/executors"):
        assert f"{namespace}/__init__.py" not in names, f"{namespace} must stay a namespace package"


def test_installed_wheel_renders_from_outside_the_checkout(venv: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert helpers.REPO not in outside.parents
    located = _run(
        venv / "bin" / "python",
        "-c",
        "from importlib import resources; import nemo_gym.orchestration.executors.otel as m; "
        "print(m.__file__); print(resources.files(m) / 'templates')",
        cwd=outside,
    ).splitlines()
    for path in located:
        assert Path(path).is_relative_to(venv), f"{path} is not inside the new venv"

    config = shutil.copyfile(helpers.REPO / "examples" / "submit.yaml", outside / "submit.yaml")
    job_dir = outside / "runs" / "gym-demo" / "aime25"
    cli = venv / "bin" / "nemo-gym-otel"
    env = helpers.cli_env(OTEL_TOKEN="token-for-the-wheel-test", PYTHONPATH=None)
    result = helpers.run_cli(
        "render",
        config,
        "--benchmark",
        "aime25",
        "--job-dir",
        job_dir,
        cwd=outside,
        env=env,
        cli=cli,
    )

    assert result.returncode == 0, result.stderr
    target = job_dir / "otel" / "collector.yaml"
    assert result.stdout == f"{target}\n"
    text = target.read_text(encoding="utf-8")
    parsed = yaml.safe_load(text)
    assert {"receivers", "processors", "exporters", "service"} <= set(parsed)
    wheel_version = next(venv.glob("lib/python*/site-packages/nemo_gym_otel-*.dist-info")).name
    assert wheel_version == f"nemo_gym_otel-{version('nemo-gym-otel')}.dist-info"
    assert f"nemo-gym-otel {version('nemo-gym-otel')}" in text.splitlines()[0]
    # The bundled example, too, is read from inside the installed package.
    assert helpers.run_cli("check", cwd=outside, env=env, cli=cli).returncode == 0
    step = helpers.run_cli(
        "step", config, "--benchmark", "aime25", "--job-dir", job_dir, cwd=outside, env=env, cli=cli
    )
    assert step.returncode == 0, step.stderr
    assert "otel_collector_start() {" in step.stdout
