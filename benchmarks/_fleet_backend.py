"""The one backend the fleet's collectors share: bounded capacity, an outage switch, and a
count of every numbered item by job.

Like a real ingest backend, it spends its capacity on items (spans, log records, data points,
whatever their scope): a token bucket refilled at ``capacity`` items per second admits a request
while it holds any token at all and then charges the request's items, so it may go into debt
(a request of 8,192 items is admitted by a backend of 1,000 items/s, and the next ones wait);
a request it does not admit is answered 429 with ``Retry-After``: the whole seconds the bucket
needs to be out of debt, at least 1. During an outage every request is answered 503. A request
whose token is none of the jobs', or whose resources lack the tenant attribute, is answered 200
and lost (the routing proxy's contract, ``support/e2e_backend.py``).

Every answer is kept as an event (time, job, signal, status, items), for the figures: refusals
against acceptances, when each collector came back after an outage, whether they came back
together.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler

from support.e2e_backend import (
    ROUTES,
    BadRequest,
    Reply,
    carries_tenant,
    decode_body,
    encode_response,
    media_type,
    otlp_handler,
)
from support.e2e_services import LoopbackServer

from ._fleet_items import Tally, all_items, item_numbers


class TokenBucket:
    """Capacity in items per second, with a burst of ``burst_seconds`` of it."""

    def __init__(self, capacity: float, now: float, burst_seconds: float = 1.0) -> None:
        self.capacity = capacity
        self.burst_seconds = burst_seconds
        self.tokens = capacity * burst_seconds
        self._at = now

    def set_capacity(self, capacity: float, now: float) -> None:
        self._refill(now)
        self.capacity = capacity
        self.tokens = min(self.tokens, capacity * self.burst_seconds)

    def _refill(self, now: float) -> None:
        self.tokens = min(
            self.tokens + (now - self._at) * self.capacity, self.capacity * self.burst_seconds
        )
        self._at = now

    def retry_after(self, now: float) -> int | None:
        """None when a request is admitted now, else the whole seconds until one would be."""
        self._refill(now)
        if self.tokens > 0:
            return None
        return max(1, math.ceil(-self.tokens / self.capacity))

    def charge(self, items: int) -> None:
        self.tokens -= items


@dataclass(frozen=True)
class Event:
    t: float  # time.monotonic()
    job: int | None  # None: a token of no job
    signal: str
    status: int
    items: int  # all items of an admitted request (0 when refused)
    seconds: float = 0.0  # from the whole request read to the answer of an admitted one


class FleetBackend:
    """An OTLP/HTTP endpoint on ``host:port`` for the jobs whose tokens ``tokens`` lists (in
    job order)."""

    def __init__(self, host: str, port: int, tokens: list[str], capacity: float) -> None:
        self._jobs = {f"Bearer {token}": index for index, token in enumerate(tokens)}
        self._tokens = tokens
        self._lock = threading.Lock()
        self._bucket = TokenBucket(capacity, time.monotonic())
        self._outage = False
        self.phase = ""  # the scenario the events and duplicates are attributed to
        self.events: list[Event] = []
        self.tally = Tally()
        self.twice: Counter[str] = Counter()  # phase -> arrivals of items that had arrived before
        self.untenanted = 0  # items answered 200 and lost: no job's token, or no tenant
        self._server = LoopbackServer(otlp_handler(self._serve), port=port, host=host)

    @property
    def url(self) -> str:
        return self._server.url

    def set_capacity(self, capacity: float) -> None:
        with self._lock:
            self._bucket.set_capacity(capacity, time.monotonic())

    def set_outage(self, outage: bool) -> None:
        with self._lock:
            self._outage = outage

    def _refusal(self, job: int | None, signal: str) -> Reply | None:
        """503 in an outage, 429 beyond the capacity; None when admitted (under the lock)."""
        now = time.monotonic()
        if self._outage:
            self.events.append(Event(now, job, signal, 503, 0))
            return 503, "text/plain", b"backend unavailable"
        wait = self._bucket.retry_after(now)
        if wait is None:
            return None
        self.events.append(Event(now, job, signal, 429, 0))
        return 429, "text/plain", b"over capacity", {"Retry-After": str(wait)}

    def _serve(self, handler: BaseHTTPRequestHandler, path: str, body: bytes) -> Reply:
        if path not in ROUTES:
            return 404, "text/plain", b"unknown path"
        signal, request_type, response_type = ROUTES[path]
        arrived = time.monotonic()
        job = self._jobs.get(handler.headers.get("Authorization", ""))
        with self._lock:  # refused before the body is decoded: refusing stays cheap
            refusal = self._refusal(job, signal)
        if refusal:
            return refusal
        content_type = media_type(handler.headers)
        try:
            message = decode_body(handler.headers, body, request_type)
        except BadRequest as exc:
            return 400, "text/plain", str(exc).encode()
        items = all_items(signal, message)
        tenant = job is not None and carries_tenant(signal, message, self._tokens[job])
        numbers = item_numbers(signal, message) if tenant else []
        with self._lock:
            refusal = self._refusal(job, signal)  # others may have spent the capacity since
            if refusal:
                return refusal
            self._bucket.charge(items)
            now = time.monotonic()
            self.events.append(Event(now, job, signal, 200, items, now - arrived))
            if tenant and job is not None:
                self.twice[self.phase] += self.tally.add(job, signal, numbers)
            else:
                self.untenanted += items
        return 200, content_type, encode_response(content_type, response_type())

    def delivered(self) -> int:
        """Distinct numbered items that arrived so far."""
        with self._lock:
            return self.tally.unique()

    def events_between(self, start: float, end: float) -> list[Event]:
        with self._lock:
            return [event for event in self.events if start <= event.t < end]

    def close(self) -> None:
        self._server.close()
