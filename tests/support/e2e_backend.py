"""A backend like production: an OTLP/HTTP server behind the tenant-routing proxy.

The proxy answers 200 to every request, but forwards a payload to the backend only when every
resource in it carries the ``Authorization`` attribute equal to the ingest token; anything else
is counted as dropped and silently lost, exactly the failure the package exists to prevent. It
records every ``Authorization`` header it sees, and can be switched to misbehave like a backend
in trouble: answer 503 (an outage), refuse connections, accept requests and never answer (a
black hole), take a request and answer it only after the sender gave up on it (a slow
backend, which at-least-once delivery must ask twice), or push back: answer 429 or 503 with
``Retry-After`` for a while (an overloaded backend), recording when every request arrived. Both
listen on 127.0.0.1 on ports the kernel picks.
"""

from __future__ import annotations

import gzip
import http.client
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from .e2e_otlp import (
    TENANT_ATTRIBUTE,
    attributes_of,
    items_of,
    parse_otlp_json,
    resource_groups,
)
from .e2e_services import LoopbackServer

# OTLP/HTTP paths to (signal, request message, response message).
ROUTES = {
    "/v1/traces": ("traces", ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/metrics": ("metrics", ExportMetricsServiceRequest, ExportMetricsServiceResponse),
    "/v1/logs": ("logs", ExportLogsServiceRequest, ExportLogsServiceResponse),
}
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class BadRequest(Exception):
    pass


def media_type(headers: Any) -> str:
    return (headers.get("Content-Type") or PROTOBUF).split(";")[0].strip().lower()


def decode_body(headers: Any, body: bytes, message_type: type) -> Any:
    """An OTLP/HTTP request body (protobuf or JSON, gzip/deflate or not) as its proto message."""
    encoding = (headers.get("Content-Encoding") or "identity").lower()
    try:
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        elif encoding != "identity":
            raise BadRequest(f"unsupported Content-Encoding {encoding}")
        content_type = media_type(headers)
        if content_type == JSON:
            return parse_otlp_json(body.decode("utf-8"), message_type)
        if content_type != PROTOBUF:
            raise BadRequest(f"unsupported Content-Type {content_type}")
        message = message_type()
        message.ParseFromString(body)
        return message
    except (OSError, EOFError, zlib.error, DecodeError, ValueError, json_format.ParseError) as exc:
        raise BadRequest(f"undecodable body: {exc}") from exc


def encode_response(content_type: str, message: Any) -> bytes:
    if content_type == JSON:
        return json_format.MessageToJson(message).encode()
    return message.SerializeToString()


# (status, content type, body), optionally followed by extra response headers (Retry-After).
Reply = tuple[int, str, bytes] | tuple[int, str, bytes, dict[str, str]]


def otlp_handler(
    serve: Callable[[BaseHTTPRequestHandler, str, bytes], Reply | None],
) -> type:
    """A request handler around ``serve``; a reply of None drops the connection unanswered."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            reply = serve(self, self.path, body)
            if reply is None:
                self.close_connection = True
                return
            status, content_type, payload, *extra = reply
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            for name, value in (extra[0] if extra else {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            try:
                self.end_headers()
                self.wfile.write(payload)
            except ConnectionError:  # the client gave up waiting (a late answer)
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    return Handler


def carries_tenant(signal: str, message: Any, token: str) -> bool:
    """Whether every resource of an OTLP request carries the ``Authorization`` attribute ``token``."""
    return all(
        attributes_of(group.resource.attributes).get(TENANT_ATTRIBUTE) == token
        for group in resource_groups(signal, message)
    )


class OtlpBackend:
    """Keeps every request it receives, decoded; answers like an OTLP/HTTP receiver."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[str, list[Any]] = {signal: [] for signal, _, _ in ROUTES.values()}
        self._server = LoopbackServer(otlp_handler(self._serve))

    @property
    def port(self) -> int:
        return self._server.port

    def _serve(self, handler: BaseHTTPRequestHandler, path: str, body: bytes) -> Reply:
        if path not in ROUTES:
            return 404, "text/plain", b"unknown path"
        signal, request_type, response_type = ROUTES[path]
        content_type = media_type(handler.headers)
        try:
            message = decode_body(handler.headers, body, request_type)
        except BadRequest as exc:
            return 400, "text/plain", str(exc).encode()
        self.receive(signal, message, handler.headers)
        return 200, content_type, encode_response(content_type, response_type())

    def receive(self, signal: str, message: Any, headers: Any) -> None:
        """Keep one decoded request; a subclass may count it instead."""
        with self._lock:
            self.requests[signal].append(message)

    def items(self, signal: str) -> list[Any]:
        with self._lock:
            messages = list(self.requests[signal])
        groups = [group for message in messages for group in resource_groups(signal, message)]
        return items_of(signal, groups)

    def close(self) -> None:
        self._server.close()


@dataclass(frozen=True)
class Arrival:
    """A request as it reached the proxy: when (``time.monotonic``), the push-back status it
    was answered (0: none), and its items (decoded, as ``items_of`` gives them)."""

    at: float
    pushed_back: int
    items: tuple[Any, ...]


class RoutingProxy:
    """The tenant-routing proxy in front of ``backend``: 200 always, forwards only tenant payloads."""

    def __init__(self, backend: OtlpBackend, token: str, host: str = "127.0.0.1") -> None:
        """``host``: the address it listens on (the multi-node cluster's bridge address, so
        that a collector on another node reaches it)."""
        self._backend = backend
        self._token = token
        self._lock = threading.Lock()
        self._outage = False
        self._refusing = False
        self._black_hole = False
        self._closing = threading.Event()  # releases the requests a black hole holds
        self.headers: list[str | None] = []  # every Authorization header, in arrival order
        self.kept: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()  # answered 503 during an outage
        self.held: Counter[str] = Counter()  # requests a black hole took and never answered
        self._late_seconds = 0.0
        self._late_pending: set[str] = set()  # signals whose next kept request is answered late
        self.late: dict[str, list[Any]] = {}  # signal -> the requests kept and answered late
        self.answered_late: Counter[str] = Counter()
        # status, Retry-After, until, how many requests more (None: any number)
        self._push_back: tuple[int, int, float, int | None] | None = None
        self.arrivals: dict[str, list[Arrival]] = {}  # signal -> every request, in order
        self._server = LoopbackServer(otlp_handler(self._serve), host=host)

    @property
    def url(self) -> str:
        return self._server.url

    def start_outage(self) -> None:
        with self._lock:
            self._outage = True

    def end_outage(self) -> None:
        with self._lock:
            self._outage = False

    def refuse_connections(self) -> None:
        """From now on: no listener (connections are refused), open connections dropped."""
        with self._lock:
            self._refusing = True
        self._server.shutdown()
        self._server.server_close()

    def become_black_hole(self) -> None:
        """From now on: every request is read and never answered (until ``close``)."""
        with self._lock:
            self._black_hole = True

    def push_back(
        self, status: int, retry_after: int, seconds: float, requests: int | None = None
    ) -> float:
        """For ``seconds`` from now: every request answered ``status`` (429, 503) with
        ``Retry-After: <retry_after>``, or only the next ``requests`` of them; returns when that
        began (``time.monotonic``)."""
        began = time.monotonic()
        with self._lock:
            self._push_back = (status, retry_after, began + seconds, requests)
        return began

    def answer_late(self, seconds: float, signals: tuple[str, ...]) -> None:
        """The next request of each of ``signals`` that the backend keeps is answered only after
        ``seconds`` (the backend has its items by then); the requests after it promptly."""
        with self._lock:
            self._late_seconds = seconds
            self._late_pending = set(signals)

    def _serve(self, handler: BaseHTTPRequestHandler, path: str, body: bytes) -> Reply | None:
        with self._lock:
            self.headers.append(handler.headers.get("Authorization"))
            outage, refusing, black_hole = self._outage, self._refusing, self._black_hole
        if refusing:
            return None
        if path not in ROUTES:
            return 404, "text/plain", b"unknown path"
        signal, request_type, response_type = ROUTES[path]
        now = time.monotonic()
        try:
            items = tuple(
                items_of(
                    signal,
                    resource_groups(signal, decode_body(handler.headers, body, request_type)),
                )
            )
        except BadRequest:
            items = ()
        with self._lock:
            push_back = self._push_back if self._push_back and now < self._push_back[2] else None
            if push_back and push_back[3] is not None:
                if push_back[3] > 0:
                    self._push_back = (*push_back[:3], push_back[3] - 1)
                else:
                    push_back = None
            self.arrivals.setdefault(signal, []).append(
                Arrival(now, push_back[0] if push_back else 0, items)
            )
        if push_back:
            status, retry_after, *_ = push_back
            return status, "text/plain", b"slow down", {"Retry-After": str(retry_after)}
        if black_hole:
            with self._lock:
                self.held[signal] += 1
            self._closing.wait()
            return None
        if outage:
            with self._lock:
                self.refused[signal] += 1
            return 503, "text/plain", b"backend unavailable"
        content_type = media_type(handler.headers)
        try:
            message = decode_body(handler.headers, body, request_type)
        except BadRequest:
            message = None
        if message is None or not carries_tenant(signal, message, self._token):
            with self._lock:
                self.dropped[signal] += 1
            return 200, content_type, encode_response(content_type, response_type())
        status, reply_type, reply = self._forward(handler, path, body)
        with self._lock:
            self.kept[signal] += 1
            late = signal in self._late_pending
            if late:
                self._late_pending.discard(signal)
                self.late.setdefault(signal, []).append(message)
        if late:
            self._closing.wait(self._late_seconds)
            with self._lock:
                self.answered_late[signal] += 1
        return status, reply_type, reply

    def _forward(self, handler: BaseHTTPRequestHandler, path: str, body: bytes) -> Reply:
        connection = http.client.HTTPConnection("127.0.0.1", self._backend.port, timeout=10)
        try:
            headers = {
                name: handler.headers[name]
                for name in ("Content-Type", "Content-Encoding", "Authorization")
                if handler.headers.get(name) is not None
            }
            connection.request("POST", path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheader("Content-Type") or PROTOBUF, response.read()
        finally:
            connection.close()

    def close(self) -> None:
        self._closing.set()
        self._server.close()
