"""``nemo-gym-otel report`` names, per node, each scrape target that was never up or went down.

The metrics file is written here in the collector's OTLP-JSON shape: the Prometheus receiver's
``up`` gauge per target resource (``service.instance.id`` = the instance label, ``host.name``
from the config's host transform, ``service.name.override`` = the scrape job). The real
collector writes it in tests/slurm/test_multi_node_job.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support import helpers

SECOND = 1_000_000_000
START = 1_700_000_000 * SECOND


def _up(job: str, instance: str, values: list[int], first: int = 0) -> dict[str, Any]:
    """``up`` of one target, one reading every 15 s from the ``first``-th scrape on."""
    node = instance.rpartition(":")[0]
    attributes = {"service.instance.id": instance, "host.name": node, "service.name.override": job}
    points = [
        {"timeUnixNano": str(START + i * 15 * SECOND), "asDouble": float(v)}
        for i, v in enumerate(values, start=first)
    ]
    resource = {
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]
    }
    metric = {"name": "up", "gauge": {"dataPoints": points}}
    return {"resourceMetrics": [{"resource": resource, "scopeMetrics": [{"metrics": [metric]}]}]}


def _job_dir(tmp_path: Path, lines: list[dict[str, Any]], targets: dict[str, list[str]]) -> Path:
    otel = tmp_path / "runs" / "gym-1" / "aime25" / "otel"
    (otel / "targets").mkdir(parents=True)
    for name, instances in targets.items():
        groups = [{"targets": [i], "labels": {"instance": i}} for i in instances]
        (otel / "targets" / name).write_text(json.dumps(groups))
    # Each line is one export; the up readings of one target arrive split across lines.
    (otel / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (otel / "traces.jsonl").write_text("")
    (otel / "logs.jsonl").write_text("")
    return otel.parent


def test_each_missing_target_is_named_with_its_node(tmp_path: Path) -> None:
    job_dir = _job_dir(
        tmp_path,
        [
            _up("node", "n1:9100", [1, 1]),
            _up("node", "n2:9100", [1, 1]),
            _up("dcgm", "n2:9400", [0, 0]),  # a node without GPUs
            _up("node", "n3:9100", [1, 1, 0]),
            _up("node", "n3:9100", [0], first=3),  # a later export: down to the end
            _up("gym-vllm/judge", "n2:8100", [0, 1, 0, 1]),  # answered again
            _up("node", "n1:9100", [1], first=2),
        ],
        {
            "node.json": ["n1:9100", "n2:9100", "n3:9100"],
            "dcgm.json": ["n2:9400", "n3:9400"],  # n3's never scraped: the job ended first
            "model-judge.json": ["n2:8100"],
        },
    )
    result = helpers.run_cli("report", job_dir, "--format", "json", cwd=tmp_path)
    targets = {t["instance"]: t for t in json.loads(result.stdout)["scrape_targets"]}
    assert {i: (t["node"], t["state"]) for i, t in targets.items()} == {
        "n1:9100": ("n1", "up"),
        "n2:9100": ("n2", "up"),
        "n2:9400": ("n2", "never up"),
        "n3:9100": ("n3", "went down"),
        "n3:9400": ("n3", "never scraped"),
        "n2:8100": ("n2", "down for a while"),
    }
    assert targets["n3:9100"]["down_since_unix_nano"] == START + 30 * SECOND
    assert (targets["n3:9100"]["scrapes"], targets["n3:9100"]["failed_scrapes"]) == (4, 2)
    assert targets["n2:8100"]["job"] == "gym-vllm/judge"
    assert targets["n3:9400"]["job"] == "dcgm"  # from the targets file it was listed in

    text = helpers.run_cli("report", job_dir, cwd=tmp_path).stdout
    section = text[text.index("scrape targets:") :].splitlines()
    assert section == [
        "scrape targets: 2 of 6 up throughout",
        "  n2: dcgm (n2:9400) never up",
        "  n2: gym-vllm/judge (n2:8100) down for a while",
        "  n3: dcgm (n3:9400) never scraped",
        "  n3: node (n3:9100) went down at 2023-11-14 22:13:50 UTC",
    ]


def test_a_job_without_scraping_lists_no_targets(tmp_path: Path) -> None:
    job_dir = _job_dir(tmp_path, [], {})
    result = helpers.run_cli("report", job_dir, "--format", "json", cwd=tmp_path)
    assert json.loads(result.stdout)["scrape_targets"] == []
    assert "scrape targets" not in helpers.run_cli("report", job_dir, cwd=tmp_path).stdout
