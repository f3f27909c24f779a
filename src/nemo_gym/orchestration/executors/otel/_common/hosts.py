"""Host names and addresses, answered in one place.

Which hosts never leave the node (where the ingest token may travel over plain ``http://``): the
submit config's ``otel.endpoint`` and a collector config's OTLP/HTTP exporters are judged by the
same answer, so a URL the submit rules accept is one the collector-config check accepts. How an
address is written beside a port (IPv6 in brackets) and where a client on the node connects to
a collector bound to a wildcard: the rendered config, the driver's environment and the job step
must agree on both.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

_LOOPBACK_NAMES = frozenset({"localhost"})
# A collector bound to a wildcard answers on loopback too; an unspecified address is no place to
# connect to.
_WILDCARD_TO_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}


def bracketed(host: str) -> str:
    """``host`` as a URL or ``host:port`` writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def host_port(host: str, port: int) -> str:
    return f"{bracketed(host)}:{port}"


def is_wildcard(host: str) -> bool:
    """Whether binding ``host`` listens on every interface."""
    return host in _WILDCARD_TO_LOOPBACK


def connect_host(listen_host: str) -> str:
    """Where a client on the node reaches a collector bound to ``listen_host``."""
    return _WILDCARD_TO_LOOPBACK.get(listen_host, listen_host)


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cleartext_off_node(url: str) -> bool:
    """Whether ``url`` is ``http://`` to a host that is not loopback: what it carries crosses
    the network readable by anyone on the path."""
    if not url.lower().startswith("http://"):
        return False
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return True
    return not is_loopback(host)


def url_userinfo(url: str) -> str | None:
    """The userinfo of ``scheme://userinfo@host...``, or None; read without a URL parser, which
    the ``:`` and ``{`` of a ``${env:NAME}`` reference would confuse."""
    _, sep, rest = url.partition("://")
    if not sep:
        return None
    for stop in "/?#":
        rest = rest.split(stop, 1)[0]
    userinfo, at, _ = rest.rpartition("@")
    return userinfo if at else None
