"""The README's executor snippet runs as pasted (issue 17): beside a ``submit.yaml``, with the
token exported, it writes every benchmark's collector config where the batch script expects it
and warns of nothing. The bash batch script after it is checked for syntax."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import helpers
import yaml

README = (helpers.REPO / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## How the executor uses it\n", 1)[1].split("\n## ", 1)[0]


def test_the_executor_snippet_runs_as_pasted(tmp_path: Path) -> None:
    (snippet,) = re.findall(r"```python\n(.*?)\n```", SECTION, flags=re.DOTALL)[:1]
    mapping = helpers.load_mapping(helpers.EXAMPLE)
    mapping["job"]["output_path"] = str(tmp_path / "runs")
    (tmp_path / "submit.yaml").write_text(yaml.safe_dump(mapping), encoding="utf-8")
    runner = (
        "import warnings\nwarnings.simplefilter('error')\n"  # a warning fails the snippet
        + snippet
        + "\nprint(sorted(driver_env)[0], len(step_fragment) > 0)\n"
    )

    result = subprocess.run(
        [sys.executable, "-c", runner],
        cwd=tmp_path,
        env=helpers.cli_env(
            OTEL_TOKEN="snippet-token", WANDB_API_KEY="k"
        ),  # host:VAR of driver.env
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "True"
    for benchmark in mapping["driver"]["benchmarks"]:
        written = tmp_path / "runs" / "gym-0001" / benchmark / "otel" / "collector.yaml"
        assert written.is_file(), benchmark
        assert "snippet-token" not in written.read_text(encoding="utf-8")


def test_the_batch_scripts_are_bash() -> None:
    scripts = re.findall(r"```bash\n(#!/bin/bash\n.*?)\n```", SECTION, flags=re.DOTALL)
    assert scripts
    for script in scripts:
        checked = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
