"""The driver of the Slurm test job, run as an ``srun --overlap`` step in the environment of
``merged_driver_env`` (the batch script exports it).

Like the e2e run, it sends the model service its traffic, runs the job's producers
(``e2e_producer.py``: the real OpenTelemetry SDK, one process per ``service.name``), waits until
the collector has scraped every target, sends the final traffic, and lets the producers send
their last batch and end their last spans as they exit: the very last moment of the job. It then
writes what the collector accepted (the producers' reports) and what the model served to
``--report``, for the test to compare with what arrived.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

from .e2e_job import Producers, running, wait_for

SERVICE_TIMEOUT_SECONDS = 60
FIRST_TRAFFIC = {"requests": 40, "prompt_tokens": 12_000, "running": 3}
FINAL_TRAFFIC = {"requests": 9, "prompt_tokens": 3_456, "running": 0}


def control(control_dir: Path, service: str, traffic: dict[str, int] | None = None) -> Any:
    """``GET /state`` of a service step, or ``POST /serve`` of ``traffic`` to it."""
    port = (control_dir / f"{service}.port").read_text()
    data = None if traffic is None else json.dumps(traffic).encode()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", data=data, timeout=10) as reply:
        return json.load(reply)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--control-dir", type=Path, required=True)
    parser.add_argument("--services", required=True, help="comma-separated service step names")
    parser.add_argument("--model", required=True, help="the service step that takes traffic")
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--gym-job-id", required=True)
    args = parser.parse_args()
    services = args.services.split(",")
    wait_for(
        lambda: all((args.control_dir / f"{s}.port").exists() for s in services),
        SERVICE_TIMEOUT_SECONDS,
        "the service steps",
    )
    control(args.control_dir, args.model, FIRST_TRAFFIC)
    producers = Producers(args.gym_job_id, args.report.parent, env=dict(os.environ))
    with running(producers):
        producers.wait_ready()
        # Prometheus's discovery hands the receiver its targets only after a few seconds.
        wait_for(
            lambda: all(control(args.control_dir, s)["scrapes"] for s in services),
            SERVICE_TIMEOUT_SECONDS,
            "the first scrape of every service",
            0.5,
        )
        served = control(args.control_dir, args.model, FINAL_TRAFFIC)
        sent = producers.finish()
    report = {"sent": sent, "served": served, "finished_at": time.time()}
    staged = args.report.with_name(f".{args.report.name}")
    staged.write_text(json.dumps(report))
    os.replace(staged, args.report)


if __name__ == "__main__":
    main()
