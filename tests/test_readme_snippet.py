"""The README's executor snippet runs as pasted (issue 17): beside a ``submit.yaml``, with the
token exported, it writes every benchmark's collector config where the batch script expects it
and warns of nothing. The batch scripts shown with it (in the README's section and, since issue
20, in the documentation's job-step and multi-node pages) are checked for syntax."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml
from support import helpers

README = (helpers.REPO / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## How the executor uses it\n", 1)[1].split("\n## ", 1)[0]
DOCS = helpers.REPO / "docs"
BATCH_SCRIPT_PAGES = (DOCS / "guide" / "job-step.md", DOCS / "guide" / "multi-node.md")


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


def _batch_scripts(text: str) -> list[str]:
    return re.findall(r"```bash\n(#!/bin/bash\n.*?)\n```", text, flags=re.DOTALL)


def test_the_batch_scripts_are_bash() -> None:
    for page in BATCH_SCRIPT_PAGES:  # a plain job's script, and a heterogeneous job's
        assert _batch_scripts(page.read_text(encoding="utf-8")), page.name
    texts = [SECTION, *(p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md")))]
    scripts = [script for text in texts for script in _batch_scripts(text)]
    assert len(scripts) >= len(BATCH_SCRIPT_PAGES)
    for script in scripts:
        checked = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
