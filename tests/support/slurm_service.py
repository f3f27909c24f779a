"""One service of the Slurm test job, run as its own ``srun --overlap`` step until the job ends.

``model NAME --model-name M --port P`` is a vLLM-shaped model service (``ModelService``: real
``prometheus_client``); ``fixture NAME --fixture FILE --port P`` is a node exporter (DCGM,
node_exporter) or a real vLLM's exposition (``FixtureExporter``). Each serves ``/metrics`` on
the port the rendered config scrapes. Beside it, a control port the kernel picks, written to
``<control dir>/<NAME>.port``, lets the driver step do what the e2e run does in-process: send the
model traffic (``POST /serve``) and see how often the collector scraped (``GET /state``).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from .e2e_services import FixtureExporter, LoopbackServer, ModelService


def control_handler(target: ModelService | FixtureExporter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            body = json.dumps(state(target)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._reply()

        def do_POST(self) -> None:
            traffic = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            assert isinstance(target, ModelService), "only a model service takes traffic"
            target.serve(**traffic)
            self._reply()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def state(target: ModelService | FixtureExporter) -> dict[str, int]:
    if isinstance(target, ModelService):
        return {
            "scrapes": target.scrapes,
            "prompt_tokens_total": target.prompt_tokens_total,
            "requests": target.requests,
        }
    return {"scrapes": target.scrapes}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("model", "fixture"))
    parser.add_argument("name")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1", help="the address /metrics listens on")
    parser.add_argument("--control-dir", type=Path, required=True)
    parser.add_argument("--model-name")
    parser.add_argument("--fixture")
    args = parser.parse_args()
    if args.kind == "model":
        target: ModelService | FixtureExporter = ModelService(args.model_name, args.port, args.host)
    else:
        target = FixtureExporter(args.fixture, args.port, args.host)
    control = LoopbackServer(control_handler(target))
    staged = args.control_dir / f".{args.name}.port"
    staged.write_text(str(control.port))
    os.replace(staged, args.control_dir / f"{args.name}.port")
    threading.Event().wait()  # until the job ends and Slurm stops the step


if __name__ == "__main__":
    main()
