"""Hops: an OTLP/HTTP exporter that sends to the same collector's own loopback OTLP receiver.

The backend's disk queue sits on such a hop (the template's data flow): what is queued on disk
must not carry the tenant attribute, so the token is stamped after the hop, in the pipelines of
the receiver the hop reaches. To the tenant rules a hop is an edge inside the collector, like a
connector: what it carries enters every pipeline of its receiver, it leaves nothing on the
network, and it needs neither the token nor the backend's URL. Only the collector's own
receivers on a loopback address count, reached by URL with no per-signal endpoint, so a hop is
recognised from the config alone, whoever wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from .._common.hosts import is_loopback
from .graph import component_type, section_of

_PER_SIGNAL_KEYS = ("traces_endpoint", "metrics_endpoint", "logs_endpoint")


def _address(host: str | None, port: int | None) -> tuple[str, int] | None:
    if host is None or port is None or not is_loopback(host):
        return None
    return ("loopback", port)


def _listen_address(endpoint: Any) -> tuple[str, int] | None:
    if not isinstance(endpoint, str):
        return None
    host, _, port = endpoint.rpartition(":")
    if not port.isdigit():
        return None
    return _address(host.strip("[]"), int(port))


def _send_address(url: Any) -> tuple[str, int] | None:
    if not isinstance(url, str) or not url.lower().startswith("http://"):
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.path not in ("", "/") or parts.query:
        return None
    return _address(parts.hostname, port)


def hop_receivers(config: Mapping[str, Any]) -> dict[tuple[str, int], str]:
    """Loopback address -> the ``otlp`` receiver whose HTTP protocol binds it."""
    found: dict[tuple[str, int], str] = {}
    for receiver_id, body in section_of(config, "receivers").items():
        if component_type(str(receiver_id)) != "otlp" or not isinstance(body, Mapping):
            continue
        protocols = body.get("protocols")
        http = protocols.get("http") if isinstance(protocols, Mapping) else None
        address = _listen_address(http.get("endpoint")) if isinstance(http, Mapping) else None
        if address is not None:
            found.setdefault(address, str(receiver_id))
    return found


def queue_hops(config: Mapping[str, Any]) -> dict[str, str]:
    """Exporter id -> the collector's own receiver it sends to (an ``http://`` endpoint: an
    OTLP/HTTP exporter, whatever the line calls its type)."""
    receivers = hop_receivers(config)
    hops: dict[str, str] = {}
    for exporter_id, body in section_of(config, "exporters").items():
        if not isinstance(body, Mapping) or any(key in body for key in _PER_SIGNAL_KEYS):
            continue
        receiver = receivers.get(_send_address(body.get("endpoint")) or ("", -1))
        if receiver is not None:
            hops[str(exporter_id)] = receiver
    return hops


def disk_hops(config: Mapping[str, Any]) -> dict[str, str]:
    """Hop exporter -> its receiver, for the hops whose queue is on disk."""
    bodies = section_of(config, "exporters")
    return {e: r for e, r in queue_hops(config).items() if disk_queued(bodies.get(e))}


def disk_queued(body: Any) -> bool:
    """Whether an exporter keeps its sending queue in a storage extension (on disk)."""
    queue = body.get("sending_queue") if isinstance(body, Mapping) else None
    return (
        isinstance(queue, Mapping)
        and queue.get("enabled", True) is not False
        and bool(queue.get("storage"))
    )
