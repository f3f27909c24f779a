"""Which hosts never leave the node: where the ingest token may travel over plain ``http://``.

The submit config's ``otel.endpoint`` and a collector config's OTLP/HTTP exporters are judged by
the same answer, so a URL the submit rules accept is one the collector-config check accepts.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

_LOOPBACK_NAMES = frozenset({"localhost"})


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
