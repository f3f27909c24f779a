"""Credentials in a collector config: only ever a reference to the job's environment.

A collector config is written into every job directory and printed by ``render --stdout``, so a
secret written into it as text is a secret on shared storage. The rule, for any config (built-in
rendering, override, hand-written): every credential-bearing value is a ``${env:NAME}``
reference, resolved by the collector at start-up from the step's environment. Credential-bearing
values are

- HTTP header values, in any receiver, exporter or extension (an exporter's ``headers``, a
  receiver's client, ``headers_setter``), whose header name says authorization, token, api key,
  password, secret or cookie, in any case and with any prefix (``X-API-Key``, ``x-auth-token``);
- the credential options of components (``token``, ``tokens`` and ``password`` of auth
  extensions such as ``bearertokenauth`` and ``basicauth``; ``credentials``, ``bearer_token``,
  ``client_secret`` and ``api_key`` wherever they occur, e.g. a Prometheus scrape job's
  ``authorization``);
- the userinfo of a URL (``https://user:password@host``).

A header value may name its scheme before the reference (``Bearer ${env:NAME}``, ``Basic
${env:NAME}``). The OTLP/HTTP exporter, which carries the ingest token, must send exactly
``Authorization: Bearer ${env:<token_env>}``. A value refused here is never repeated in the
message: only the component id and the key are.

Besides: the token must not travel in cleartext, so an OTLP/HTTP exporter sends to ``https://``
unless its host is a loopback address or the submit config opts in (``otel.allow_plain_http``;
validate's ``--allow-plain-http``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from .._common.errors import Violation, dotted
from .._common.hosts import cleartext_off_node, url_userinfo
from .graph import component_type, section_of

# Sections whose components hold clients or credentials; processors and connectors hold neither.
CREDENTIAL_SECTIONS = ("receivers", "exporters", "extensions")
_CREDENTIAL_HEADER = re.compile(r"authorization|token|api[-_ ]?key|password|secret|cookie", re.I)
_CREDENTIAL_OPTIONS = frozenset(
    {"token", "tokens", "password", "credentials", "bearer_token", "client_secret", "api_key"}
)
# Options that map header names to values: a client's ``headers``, and Prometheus's header maps.
_HEADER_MAPS = frozenset({"headers", "http_headers", "proxy_connect_header"})
_REFERENCE = re.compile(r"(?:[A-Za-z][A-Za-z0-9._~+-]* +)?\$\{env:([a-zA-Z_][a-zA-Z0-9_]*)\}")
_USERINFO_REFERENCE = re.compile(r"\$\{env:([a-zA-Z_][a-zA-Z0-9_]*)\}")


def credential_header(name: Any) -> bool:
    return isinstance(name, str) and _CREDENTIAL_HEADER.search(name) is not None


def credential_option(name: Any) -> bool:
    return isinstance(name, str) and name.lower() in _CREDENTIAL_OPTIONS


def _is_url_key(key: Any) -> bool:
    return isinstance(key, str) and (key.endswith("endpoint") or key.endswith("url"))


def credential_references(path: list[Any], value: str) -> frozenset[str]:
    """The variables a value at ``path`` may expand because it is a credential written as the
    rule asks (the whole header or option value a reference, or the references of a URL's
    userinfo); empty anywhere else. The expansion rule allows these names besides the token's
    and the job id's."""
    if len(path) < 3 or path[0] not in CREDENTIAL_SECTIONS:
        return frozenset()
    key = path[-1]
    option = path[-2] if isinstance(key, int) else key  # tokens[0]: an item of a list option
    if _in_headers(path) or credential_option(option):
        found = _REFERENCE.fullmatch(value)
        return frozenset({found[1]}) if found else frozenset()
    if _is_url_key(key):
        userinfo = url_userinfo(value)
        if userinfo is not None and _userinfo_is_reference(userinfo):
            return frozenset(_USERINFO_REFERENCE.findall(userinfo))
    return frozenset()


def _userinfo_is_reference(userinfo: str) -> bool:
    """``user:${env:PASSWORD}``, or ``${env:TOKEN}`` alone (a token as the user name): the
    secret part is exactly one reference; a user name beside a password is no secret."""
    masked = _USERINFO_REFERENCE.sub("\0", userinfo)  # a reference holds a ':' of its own
    user, colon, password = masked.partition(":")
    return (password if colon else user) == "\0"


def _in_headers(path: list[Any]) -> bool:
    """``...headers.<name>`` of a credential header (a mapping), or ``...headers[i].value`` (a
    list of pairs, whose name the path does not hold: any header value may be a reference)."""
    if len(path) >= 3 and path[-3] in _HEADER_MAPS and isinstance(path[-2], int):
        return path[-1] == "value"
    for depth in (2, 3):  # headers.<name>, or headers.<name>[i] (a list of values)
        if len(path) >= depth and path[-depth] in _HEADER_MAPS:
            return credential_header(path[-depth + 1])
    return False


def _sites(node: Any, path: list[Any]) -> Iterator[tuple[list[Any], str, Any]]:
    """(path, what it is, value) of every credential-bearing value below ``node``."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            here = [*path, key]
            if key in _HEADER_MAPS:
                yield from _header_sites(value, here)
            elif credential_option(key):
                items = value if isinstance(value, list) else [value]
                for index, item in enumerate(items):
                    where = [*here, index] if isinstance(value, list) else here
                    yield where, f"the {key} option", item
            elif _is_url_key(key) and isinstance(value, str) and url_userinfo(value) is not None:
                yield here, "the URL's user information", value
            else:
                yield from _sites(value, here)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _sites(item, [*path, index])


def _header_sites(headers: Any, path: list[Any]) -> Iterator[tuple[list[Any], str, Any]]:
    if isinstance(headers, Mapping):
        for name, value in headers.items():
            if not credential_header(name):
                continue
            if isinstance(value, list):  # Prometheus: a header's list of values
                for index, item in enumerate(value):
                    yield [*path, name, index], f"the {name} header", item
            else:
                yield [*path, name], f"the {name} header", value
    elif isinstance(headers, list):  # [{name, value}], or headers_setter's [{key, value}]
        for index, pair in enumerate(headers):
            if not isinstance(pair, Mapping):
                continue
            name = pair.get("name", pair.get("key"))
            if credential_header(name) and "value" in pair:
                yield [*path, index, "value"], f"the {name} header", pair["value"]


def _written_as_reference(what: str, value: Any) -> bool:
    if value is None or value == "":
        return True  # nothing secret is written
    if not isinstance(value, str):
        return False
    if what.startswith("the URL"):
        return _userinfo_is_reference(url_userinfo(value) or "")
    return _REFERENCE.fullmatch(value) is not None


def credential_violations(
    config: Mapping[str, Any],
    token_env: str,
    backend_type: str,
    hops: frozenset[str] = frozenset(),
) -> Iterator[Violation]:
    """Every credential written as text, and every OTLP/HTTP exporter (type ``backend_type``,
    the line's name for it) but the ``hops`` to the collector itself whose Authorization is not
    exactly the token's reference."""
    bearer = "Bearer ${env:" + token_env + "}"
    for section in CREDENTIAL_SECTIONS:
        components = config.get(section)
        if not isinstance(components, Mapping):
            continue
        for component_id, body in components.items():
            for path, what, value in _sites(body, [section, component_id]):
                if not _written_as_reference(what, value):
                    yield Violation(
                        dotted(path),
                        f"{what} of {component_id} is written as a literal credential, which "
                        "would be copied into every job directory; write a reference the "
                        "collector resolves at start-up, e.g. ${env:NAME} (or "
                        "'Bearer ${env:NAME}' for a header), and export NAME in the job",
                    )
            if (
                section == "exporters"
                and component_type(str(component_id)) == backend_type
                and component_id not in hops
            ):
                yield from _backend_authorization(component_id, body, bearer)


def _backend_authorization(component_id: str, body: Any, bearer: str) -> Iterator[Violation]:
    headers = body.get("headers") if isinstance(body, Mapping) else None
    pairs: list[tuple[list[Any], Any, Any]] = []
    if isinstance(headers, Mapping):
        pairs = [(["headers", name], name, value) for name, value in headers.items()]
    elif isinstance(headers, list):
        pairs = [
            (["headers", i, "value"], p.get("name"), p.get("value"))
            for i, p in enumerate(headers)
            if isinstance(p, Mapping)
        ]
    found = [(path, value) for path, name, value in pairs if str(name).lower() == "authorization"]
    if not found:
        yield Violation(
            dotted(["exporters", component_id, "headers"]),
            f"has no Authorization header, so the backend refuses every payload; set "
            f"Authorization: '{bearer}'",
        )
    for path, value in found:
        if value != bearer:
            yield Violation(
                dotted(["exporters", component_id, *path]),
                f"must be exactly '{bearer}' (the ingest token, from otel.token_env or "
                "validate's --token-env); anything else sends another secret or none: set it so",
            )


def plain_http_violations(
    config: Mapping[str, Any], allow_plain_http: bool, backend_type: str
) -> Iterator[Violation]:
    """An OTLP/HTTP exporter sends the token in its header: never in cleartext off the node."""
    if allow_plain_http:
        return
    for exporter_id, body in section_of(config, "exporters").items():
        if component_type(str(exporter_id)) != backend_type or not isinstance(body, Mapping):
            continue
        for key in ("endpoint", "traces_endpoint", "metrics_endpoint", "logs_endpoint"):
            url = body.get(key)
            if isinstance(url, str) and cleartext_off_node(url):
                yield Violation(
                    dotted(["exporters", exporter_id, key]),
                    "sends the ingest token over plain http:// to a host that is not loopback, "
                    "readable on the network; use https://, or opt in for a proxy on the node's "
                    "private network (otel.allow_plain_http: true; validate's --allow-plain-http)",
                )
