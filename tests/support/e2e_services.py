"""What the collector scrapes on a compute node: a vLLM-like model service and two node exporters.

The model service is real ``prometheus_client`` in a registry of its own, holding vLLM's metric
names (a gauge, a counter and a histogram), served by ``prometheus_client``'s own HTTP server.
The DCGM exporter and node_exporter serve the realistic expositions in ``tests/data/expositions``.
Everything listens on 127.0.0.1 on a port the kernel picks, unless told an address and port (a
service on another node of the multi-node cluster listens on all of its interfaces).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.parser import text_string_to_metric_families

from . import helpers

TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"

# vLLM's names; the collector must deliver them as vllm_<rest>, types intact.
RUNNING = "vllm:num_requests_running"
PROMPT_TOKENS = "vllm:prompt_tokens_total"
TTFT = "vllm:time_to_first_token_seconds"
TTFT_BUCKETS = (0.02, 0.1, 0.5, 2.5, 10.0)


class _ScrapeCounter:
    """A collector that exposes nothing and counts how often the registry was collected."""

    def __init__(self) -> None:
        self.count = 0

    def describe(self) -> list[object]:
        return []

    def collect(self) -> list[object]:
        self.count += 1
        return []


class Traffic(Protocol):
    """What a model service served, as the checks compare it with the scraped counters."""

    prompt_tokens_total: int
    requests: int


class ModelService:
    """A vLLM-shaped ``/metrics`` endpoint; ``serve()`` changes its numbers like traffic would."""

    def __init__(self, model_name: str, port: int = 0, host: str = "127.0.0.1") -> None:
        self.model_name = model_name
        self.registry = CollectorRegistry(auto_describe=True)
        labels = ["model_name", "engine"]
        self.running = Gauge(
            RUNNING,
            "Number of requests in model execution batches.",
            labels,
            registry=self.registry,
        )
        # prometheus_client appends _total to a counter's name itself, so this exposes exactly
        # vllm:prompt_tokens_total, as vLLM does.
        self.prompt_tokens = Counter(
            PROMPT_TOKENS.removesuffix("_total"),
            "Number of prefill tokens processed.",
            labels,
            registry=self.registry,
        )
        self.ttft = Histogram(
            TTFT,
            "Histogram of time to first token in seconds.",
            labels,
            buckets=TTFT_BUCKETS,
            registry=self.registry,
        )
        self._scrapes = _ScrapeCounter()
        self.registry.register(self._scrapes)
        self.prompt_tokens_total = 0
        self.requests = 0
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)

    @property
    def port(self) -> int:
        return self._server.server_port

    @property
    def scrapes(self) -> int:
        return self._scrapes.count

    def serve(self, requests: int, prompt_tokens: int, running: int) -> None:
        labels = {"model_name": self.model_name, "engine": "0"}
        self.running.labels(**labels).set(running)
        self.prompt_tokens.labels(**labels).inc(prompt_tokens)
        for i in range(requests):
            self.ttft.labels(**labels).observe(0.05 * (i % 7) + 0.01)
        self.prompt_tokens_total += prompt_tokens
        self.requests += requests

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class LoopbackServer(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 (on a port the kernel picks, by default), serving from a daemon
    thread; ``host`` binds another address."""

    daemon_threads = True

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], port: int = 0, host: str = "127.0.0.1"
    ) -> None:
        super().__init__((host, port), handler)
        self.host = host
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return self.server_port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.server_port}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)


class FixtureExposition:
    """One fixture exposition (DCGM, node_exporter, a real vLLM's) and the metrics it holds."""

    def __init__(self, fixture: str) -> None:
        self.path = helpers.EXPOSITIONS / fixture
        self.text = self.path.read_text(encoding="utf-8")

    def metric_names(self) -> dict[str, str]:
        """Name as the collector's Prometheus receiver reports it, to the exposition's type."""
        return dict(exposition_names(self.text))


class FixtureExporter(FixtureExposition):
    """An exporter (DCGM, node_exporter, ...) serving one fixture exposition at ``/metrics``."""

    def __init__(self, fixture: str, port: int = 0, host: str = "127.0.0.1") -> None:
        super().__init__(fixture)
        payload = self.text.encode()
        self.scrapes = 0
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                exporter.scrapes += 1
                self.send_response(200)
                self.send_header("Content-Type", TEXT_FORMAT)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = LoopbackServer(Handler, port, host)
        self.close = self._server.close

    @property
    def port(self) -> int:
        return self._server.port


def exposition_names(text: str) -> Iterator[tuple[str, str]]:
    for family in text_string_to_metric_families(text):
        # The parser strips a counter's _total; the receiver keeps it in the metric's name.
        yield (family.name + "_total" if family.type == "counter" else family.name), family.type
