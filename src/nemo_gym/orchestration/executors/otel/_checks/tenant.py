"""The token and tenant rules: what keeps the ingest token out of files and logs, and the
tenant attribute on everything the backend gets.

The routing proxy in front of the backend resolves the tenant from a resource attribute named
``Authorization`` that holds the token, and silently drops a payload without it. So the token
travels twice, and a config is safe only when

- the token's expansion ``${env:<token_env>}`` appears only in the OTLP/HTTP exporter's
  ``Authorization`` header and as the value of the tenant attribute (a ``resource`` processor
  entry upserting or inserting ``Authorization``): anywhere else it becomes a file name, a
  label or a log line;
- every path from a receiver to an OTLP/HTTP exporter passes a tenant processor, and after it
  only processors that can neither drop the attribute nor print it (``batch``,
  ``memory_limiter``, ``resource`` processors naming their keys; a ``transform`` logs the whole
  resource at the debug level);
- no path on which the attribute was added reaches any other exporter (``file``, ``debug``, ...),
  nor an exporter whose sending queue is on disk (the queue's files would hold the token);
- only the tenant processor names ``Authorization`` among processors and connectors (a copy,
  a rename, a span-metrics dimension would carry the token elsewhere);
- no listener (receiver or extension endpoint) binds wider than ``otel.listen_host``: the
  collector stamps the tenant's token on whatever it receives;
- the collector's telemetry block binds no port at all (by default its metrics take
  ``localhost:8888``, and a busy node's collector then refuses to start; a config without the
  block is warned of);
- when the backend's URL is known (``otel.endpoint``), every OTLP/HTTP exporter sends there;
- no credential is written as text and the token never travels in cleartext (:mod:`.secrets`).

Paths run through connectors and hops (:mod:`.hops`: an OTLP/HTTP exporter sending to the
collector's own loopback receiver): what a pipeline exports to either enters every pipeline
that receives from it; a hop's receiver also takes whatever else reaches its port, so its
pipelines start without the attribute too. A hop leaves nothing on the network, so it needs
neither the tenant, the token's header nor the backend's URL. The rules judge the graph as the collector builds it, for any config,
rendered from a built-in template, an override, or written by hand.
"""

from __future__ import annotations

import ipaddress
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._common.constants import DEFAULT_TOKEN_ENV, DRAIN_METRICS_PORT
from .._common.errors import Violation, dotted
from .._common.hosts import is_loopback
from .graph import component_type, connector_readers, pipeline_refs, pipelines_of, section_of
from .hops import disk_queued, queue_hops
from .secrets import credential_violations, plain_http_violations

TENANT_KEY = "Authorization"
_ADDING_ACTIONS = frozenset({"upsert", "insert"})
_SAFE_AFTER_TENANT = frozenset({"batch", "memory_limiter"})
_PLAIN, _TENANT = "plain", "tenant"


@dataclass(frozen=True)
class TenantPolicy:
    """What the rules need besides the config: the token's variable, where to listen, (when
    known) the backend's URL, the only place the token may be sent, and whether it may be sent
    there over plain http:// (``otel.allow_plain_http``)."""

    token_env: str = DEFAULT_TOKEN_ENV
    listen_host: str = "localhost"
    endpoint: str | None = None
    allow_plain_http: bool = False


def tenant_processors(config: Mapping[str, Any], token_env: str) -> frozenset[str]:
    """The ids of the processors that add the tenant attribute: an entry upserting or inserting
    ``Authorization`` with exactly the token's expansion. The rules and the pipeline graph
    (``graph``) both mark the tenant path from here, so they cannot disagree on it."""
    token = _token(token_env)
    processors = section_of(config, "processors")
    return frozenset(pid for pid, body in processors.items() if _is_tenant(body, token))


def _token(token_env: str) -> str:
    return "${env:" + token_env + "}"


def tenant_violations(
    config: Mapping[str, Any], token_sites: list[list[Any]], policy: TenantPolicy, backend_type: str
) -> list[Violation]:
    """Every breach of the rules above; ``token_sites`` are the paths whose value expands the
    token (found by the expansion scan), ``backend_type`` the line's type name of the OTLP/HTTP
    exporter (``line.yaml``'s ``names``; deprecated aliases are renamed before the rules run)."""
    token = _token(policy.token_env)
    tenant_ids = set(tenant_processors(config, policy.token_env))
    hops = queue_hops(config)
    return [
        *_token_site_violations(config, token_sites, token, backend_type),
        *_mention_violations(config, tenant_ids),
        *_path_violations(config, tenant_ids, backend_type, hops),
        *_listener_violations(config, policy.listen_host),
        *_telemetry_violations(config),
        *_endpoint_violations(config, policy.endpoint, backend_type, hops),
        *credential_violations(config, policy.token_env, backend_type, frozenset(hops)),
        *plain_http_violations(config, policy.allow_plain_http, backend_type),
    ]


def _entries(body: Any) -> list[Mapping[str, Any]]:
    attributes = body.get("attributes") if isinstance(body, Mapping) else None
    if not isinstance(attributes, list):
        return []
    return [entry for entry in attributes if isinstance(entry, Mapping)]


def _adds_tenant(entry: Mapping[str, Any], token: str) -> bool:
    return (
        entry.get("key") == TENANT_KEY
        and entry.get("value") == token
        and _action(entry) in _ADDING_ACTIONS
    )


def _action(entry: Mapping[str, Any]) -> str:
    """The action as the collector reads it: lower-cased (attraction.go, NewAttrProc)."""
    return str(entry.get("action")).lower()


def _is_tenant(body: Any, token: str) -> bool:
    return any(_adds_tenant(entry, token) for entry in _entries(body))


def _token_site_violations(
    config: Mapping[str, Any], token_sites: list[list[Any]], token: str, backend_type: str
) -> Iterator[Violation]:
    for path in token_sites:
        if _header_site(path, backend_type) or _attribute_site(config, path, token):
            continue
        yield Violation(
            dotted(path),
            f"expands the ingest token ({token}) here; it may appear only in the OTLP/HTTP "
            f"exporter's {TENANT_KEY} header and as the value of the tenant attribute (a resource "
            f"processor entry upserting {TENANT_KEY}), so it lands in no file and no log: remove it",
        )


def _header_site(path: list[Any], backend_type: str) -> bool:
    return (
        len(path) == 4
        and path[0] == "exporters"
        and component_type(str(path[1])) == backend_type
        and path[2] == "headers"
        and str(path[3]).lower() == TENANT_KEY.lower()
    )


def _attribute_site(config: Mapping[str, Any], path: list[Any], token: str) -> bool:
    if not (
        len(path) == 5
        and path[0] == "processors"
        and component_type(str(path[1])) == "resource"
        and path[2] == "attributes"
        and path[4] == "value"
    ):
        return False
    entry = _entries(section_of(config, "processors").get(path[1]))
    index = path[3]
    return isinstance(index, int) and index < len(entry) and _adds_tenant(entry[index], token)


def _mentions(node: Any) -> bool:
    """Whether any key or value names the attribute, in any case (``repr`` shows every key and
    value of parsed YAML, and escapes nothing in a name of letters)."""
    return TENANT_KEY.lower() in repr(node).lower()


def _mention_violations(config: Mapping[str, Any], tenant_ids: set[str]) -> Iterator[Violation]:
    """Outside the tenant processor's own entries (add, convert to string), nothing among
    processors and connectors may name the attribute: a copy, rename or dimension moves it."""
    for section in ("processors", "connectors"):
        for component_id, body in section_of(config, section).items():
            if component_id in tenant_ids:
                for index, entry in enumerate(_entries(body)):
                    if entry.get("key") == TENANT_KEY and (
                        _action(entry) in _ADDING_ACTIONS
                        or (_action(entry) == "convert" and len(entry) == 3)
                    ):
                        continue
                    if _mentions(entry):
                        yield _mention(["processors", component_id, "attributes", index])
                rest = {k: v for k, v in body.items() if k != "attributes"}
                if _mentions(rest):
                    yield _mention(["processors", component_id])
            elif _mentions(body):
                yield _mention([section, component_id])


def _mention(path: list[Any]) -> Violation:
    return Violation(
        dotted(path),
        f"names the {TENANT_KEY} attribute, which only the tenant processor may add (and convert "
        "to a string); anything else would copy, rename or drop the token: remove it",
    )


def _may_touch_tenant(component_id: str, body: Any) -> bool:
    """Whether a processor after the tenant processor could drop, change or print the attribute."""
    kind = component_type(component_id)
    if kind in _SAFE_AFTER_TENANT:
        return False
    if kind == "resource":
        return any("pattern" in entry for entry in _entries(body))
    return True


def _path_violations(
    config: Mapping[str, Any], tenant_ids: set[str], backend_type: str, hops: Mapping[str, str]
) -> Iterator[Violation]:
    """Follow the two states (attribute added or not) from every receiver through processors
    and connectors to every exporter, until nothing changes.

    A worklist over pipelines: a pipeline is looked at again only when a connector it receives
    from carries a new state, and a connector's states only grow (at most twice), so the work is
    linear in the references, however many pipelines and connectors a config chains."""
    connectors = set(section_of(config, "connectors"))
    processors = section_of(config, "processors")
    exporters = section_of(config, "exporters")
    pipelines = pipelines_of(config)
    roles = {
        pid: {role: pipeline_refs(p, role) for role in ("receivers", "processors", "exporters")}
        for pid, p in pipelines.items()
    }
    receiving = connector_readers(config)
    hop_receivers = set(hops.values())
    for receiver in hop_receivers:
        receiving[receiver] = [pid for pid in pipelines if receiver in roles[pid]["receivers"]]
    # States a connector or a hop's receiver passes on.
    carried: dict[str, set[str]] = {c: set() for c in connectors}
    carried.update({receiver: {_PLAIN} for receiver in hop_receivers})
    leaving: dict[str, set[str]] = {pid: set() for pid in pipelines}
    touched: set[tuple[str, int]] = set()
    todo = deque(pipelines)
    queued = set(pipelines)
    while todo:
        pid = todo.popleft()
        queued.discard(pid)
        states: set[str] = set()
        for ref in roles[pid]["receivers"]:
            states |= carried.get(ref, {_PLAIN})
        out = set()
        for state in states:
            for index, ref in enumerate(roles[pid]["processors"]):
                if ref in tenant_ids:
                    state = _TENANT
                elif state == _TENANT and _may_touch_tenant(ref, processors.get(ref)):
                    touched.add((pid, index))
            out.add(state)
        if out == leaving[pid]:
            continue
        leaving[pid] = out
        for ref in roles[pid]["exporters"]:
            edge = ref if ref in connectors else hops.get(ref)
            if edge is not None and not out <= carried[edge]:
                carried[edge] |= out
                for target in receiving[edge]:
                    if target not in queued:
                        todo.append(target)
                        queued.add(target)
    for pid, index in sorted(touched):
        yield Violation(
            dotted(["service", "pipelines", pid, "processors", roles[pid]["processors"][index]]),
            "comes after the tenant attribute was added; only a tenant processor, batch, "
            "memory_limiter or a resource processor naming its keys may follow it (others can drop "
            "the attribute or, like transform at the debug log level, print it): move it before",
        )
    for pid in pipelines:
        for ref in roles[pid]["exporters"]:
            if ref in connectors:
                continue
            where = dotted(["service", "pipelines", pid, "exporters", ref])
            if _TENANT in leaving[pid] and disk_queued(exporters.get(ref)):
                yield Violation(
                    where,
                    "gets data carrying the tenant attribute (the token) and queues it on disk, "
                    "so the queue's files would hold the token; queue before the tenant "
                    "processor and add the attribute after a hop to the collector's own "
                    "loopback receiver (as the built-in templates do)",
                )
            elif ref in hops:
                continue
            elif component_type(ref) == backend_type:
                if _PLAIN in leaving[pid]:
                    yield Violation(
                        where,
                        "gets data on which no tenant processor added the tenant attribute, which "
                        "the routing proxy then drops without a word; put the tenant processor "
                        "on every path from a receiver to this exporter",
                    )
            elif _TENANT in leaving[pid]:
                yield Violation(
                    where,
                    "gets data carrying the tenant attribute (the token), which would land in its "
                    "output; export to it only from pipelines before the tenant processor",
                )


def _endpoint_violations(
    config: Mapping[str, Any], endpoint: str | None, backend_type: str, hops: Mapping[str, str]
) -> Iterator[Violation]:
    """An OTLP/HTTP exporter sends the token in its header: only to the backend's URL (a hop
    stays inside the collector)."""
    if endpoint is None:
        return
    for exporter_id, body in section_of(config, "exporters").items():
        if component_type(exporter_id) != backend_type or not isinstance(body, Mapping):
            continue
        if exporter_id in hops:
            continue
        for key in ("endpoint", "traces_endpoint", "metrics_endpoint", "logs_endpoint"):
            sends_to = body.get(key)
            as_read = sends_to.replace("$$", "$") if isinstance(sends_to, str) else sends_to
            if key in body and (key != "endpoint" or as_read != endpoint):  # $$ reads as $
                yield Violation(
                    dotted(["exporters", exporter_id, key]),
                    "sends the token somewhere other than otel.endpoint (validate's --endpoint); "
                    "an OTLP/HTTP exporter may only send to the backend: set endpoint to it",
                )


def _listener_violations(config: Mapping[str, Any], listen_host: str) -> Iterator[Violation]:
    for path, endpoint in _listeners(config):
        host = endpoint.rpartition(":")[0] if ":" in endpoint else endpoint
        if not _within(host.strip("[]"), listen_host.strip("[]")):
            yield Violation(
                dotted(path),
                f"binds wider than the listen host {listen_host} (otel.listen_host; validate's "
                "--listen-host); the collector stamps the tenant's token on all it receives, so "
                "bind the listen host or a loopback address",
            )


def _listeners(config: Mapping[str, Any]) -> Iterator[tuple[list[Any], str]]:
    """Every address the collector binds for its receivers and extensions (its own telemetry
    may bind none: :func:`_telemetry_violations`)."""
    for section in ("receivers", "extensions"):
        yield from _endpoints(section_of(config, section), [section])


_TELEMETRY_PORT_FIX = (
    "the collector's own metrics must bind no port (a second collector or a site-wide one on "
    "the node holding it makes the collector refuse to start): keep service.telemetry.metrics."
    "level: none, or push them with a periodic reader"
)


def telemetry_warnings(config: Mapping[str, Any]) -> list[Violation]:
    """A config with no ``service.telemetry`` at all (hand-written; every rendering has the
    block) binds ``localhost:8888`` too: said, not refused."""
    if "telemetry" in section_of(config, "service"):
        return []
    return [
        Violation(
            "service",
            "has no telemetry block, so the collector serves its own metrics on localhost:8888 "
            "and refuses to start where that port is taken; add telemetry: {metrics: {level: none}}",
        )
    ]


def _telemetry_violations(config: Mapping[str, Any]) -> Iterator[Violation]:
    """A telemetry block binds nothing: the collector's own metrics take ``localhost:8888``
    unless their level is ``none`` or every reader pushes; a pull reader or an ``address``
    binds a port of its own."""
    service = section_of(config, "service")
    if "telemetry" not in service:
        return  # no block at all: a warning (telemetry_warnings), as for a hand-written config
    telemetry = service.get("telemetry")
    metrics = telemetry.get("metrics") if isinstance(telemetry, Mapping) else None
    level = metrics.get("level") if isinstance(metrics, Mapping) else None
    if isinstance(level, str) and level.lower() == "none":
        return  # configtelemetry.Level.UnmarshalText lower-cases it: None is none
    where = ["service", "telemetry", "metrics"]
    if not isinstance(metrics, Mapping):
        yield Violation(
            dotted(where), f"is not set, so it binds localhost:8888; {_TELEMETRY_PORT_FIX}"
        )
        return
    if "address" in metrics:
        yield Violation(dotted([*where, "address"]), f"binds a port; {_TELEMETRY_PORT_FIX}")
    readers = metrics.get("readers")
    if not isinstance(readers, list) or not readers:
        if "address" not in metrics:
            yield Violation(
                dotted(where),
                f"has no reader, so the collector serves them on localhost:8888; {_TELEMETRY_PORT_FIX}",
            )
        return
    for index, reader in enumerate(readers):
        if isinstance(reader, Mapping) and "pull" in reader and not _drain_metrics(reader):
            yield Violation(
                dotted([*where, "readers", index, "pull"]),
                f"serves the metrics on a port; {_TELEMETRY_PORT_FIX}",
            )


def _drain_metrics(reader: Mapping[str, Any]) -> bool:
    """Whether a pull reader is the one the stop's drain serves its queue sizes with: Prometheus
    on loopback at ``DRAIN_METRICS_PORT``, a fixed port of the package's own like the hop's (see
    ``_render/drain_config.py``), bound only while the job's collector is gone."""
    pull = reader.get("pull")
    exporter = pull.get("exporter") if isinstance(pull, Mapping) else None
    prometheus = exporter.get("prometheus") if isinstance(exporter, Mapping) else None
    if not isinstance(prometheus, Mapping):
        return False
    host = prometheus.get("host")
    return (
        isinstance(host, str) and is_loopback(host) and prometheus.get("port") == DRAIN_METRICS_PORT
    )


# Keys under a receiver or extension whose endpoints the collector connects to, not binds: the
# prometheus receiver's scrape config and its target allocator (the address it polls).
_CLIENT_KEYS = frozenset({"config", "target_allocator"})
# A Unix socket binds no network interface (confignet's transport types for a path endpoint).
_UNIX_TRANSPORTS = frozenset({"unix", "unixgram", "unixpacket"})


def _endpoints(node: Any, path: list[Any]) -> Iterator[tuple[list[Any], str]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "endpoint" and isinstance(value, str):
                if node.get("transport") not in _UNIX_TRANSPORTS:
                    yield [*path, key], value
            elif key not in _CLIENT_KEYS:
                yield from _endpoints(value, [*path, key])
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _endpoints(item, [*path, index])


def _within(host: str, listen_host: str) -> bool:
    return host.lower() == listen_host.lower() or is_loopback(host) or _unspecified(listen_host)


def _unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return host == ""
