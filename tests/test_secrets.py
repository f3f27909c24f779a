"""No literal credential, no token in cleartext, no telemetry port (issue 17), for any collector
config: rendered from a built-in template, an override, or written by hand.

A hypothesis generator builds the class: header names (every credential word, in any case, with
prefixes and suffixes), positions (an exporter's headers, beside the backend's Authorization
and on a second exporter; an auth extension's token options; a Prometheus receiver's client
credentials and header maps; a URL's userinfo) and literal shapes. Each literal is refused with
one line naming the component and the key and never repeating the value; each ``${env:NAME}``
form in the same place is accepted.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support import helpers

from nemo_gym.orchestration.executors.otel import CollectorConfigError, validate_collector_config

GOLDEN = helpers.REPO / "tests" / "golden" / "example" / "current" / "otlp_http+file.yaml"
BEARER = "Bearer ${env:OTEL_TOKEN}"
WORDS = ["authorization", "token", "api key", "api-key", "api_key", "apikey", "password"]
WORDS += ["secret", "cookie", "auth-token", "client-secret", "set-cookie", "x-api-key"]


def _golden() -> dict[str, Any]:
    return yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))


def _errors(doc: dict[str, Any], **flags: Any) -> list[str]:
    try:
        validate_collector_config(yaml.safe_dump(doc), **flags)
    except CollectorConfigError as exc:
        return [str(v) for v in exc.violations]
    return []


def _casing(draw: Any, text: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.upper() if flip else c.lower() for c, flip in zip(text, flips, strict=True))


@st.composite
def header_names(draw: Any) -> str:
    word = _casing(draw, draw(st.sampled_from(WORDS)))
    prefix = draw(st.sampled_from(["", "X-", "x-", "Proxy-", "My_"]))
    suffix = draw(st.sampled_from(["", "-Value", "_V2", "s"]))
    name = f"{prefix}{word}{suffix}"
    assume(name.lower() != "authorization")  # the backend's own header has its exact rule
    return name


SECRET = st.from_regex(r"[A-Za-z0-9_\-]{6,40}", fullmatch=True).filter(
    lambda s: s.lower() not in "authorization bearer ${env:otel_token}"  # nor in any message
)
ENV_NAME = st.from_regex(r"[A-Z_][A-Z0-9_]{0,20}", fullmatch=True).filter(
    lambda name: name != "OTEL_TOKEN"  # the token's reference is allowed only in one place
)


@st.composite
def literals(draw: Any) -> tuple[str, str]:
    """Credentials written as text, in the shapes people write them, and the secret part."""
    secret = draw(SECRET)
    name = draw(ENV_NAME)
    return secret, draw(
        st.sampled_from(
            [
                f"sk-live-{secret}",
                f"Bearer {secret}",
                f"Basic {secret}=",
                f"{secret}",
                f"$${{env:{name}}}",  # $$ makes it literal text, not a reference
                f"Bearer ${{env:{name}}} {secret}",  # a reference with a literal beside it
                f"{secret}${{env:{name}}}",
            ]
        )
    )


@st.composite
def references(draw: Any) -> str:
    name = draw(ENV_NAME)
    scheme = draw(st.sampled_from(["", "Bearer ", "Basic ", "Token ", "ApiKey "]))
    return f"{scheme}${{env:{name}}}"


def _mirror(doc: dict[str, Any], headers: dict[str, Any]) -> None:
    doc["exporters"]["otlp_grpc/mirror"] = {"endpoint": "mirror.example:4317", "headers": headers}


def _place(doc: dict[str, Any], position: str, name: str, value: Any) -> tuple[str, Any]:
    """Put ``value`` at one credential position; return the path the refusal must name."""
    scrape = doc["receivers"]["prometheus"]["config"]["scrape_configs"][0]
    if position == "backend-extra-header":
        doc["exporters"]["otlp_http/backend"]["headers"][name] = value
        return f"exporters.otlp_http/backend.headers.{name}"
    if position == "second-exporter-header":
        _mirror(doc, {name: value})
        return f"exporters.otlp_grpc/mirror.headers.{name}"
    if position == "header-pair-list":
        _mirror(doc, [{"name": name, "value": value}])
        return "exporters.otlp_grpc/mirror.headers[0].value"
    if position == "extension-token":
        doc["extensions"]["bearertokenauth/client"] = {"token": value}
        return "extensions.bearertokenauth/client.token"
    if position == "extension-tokens":
        doc["extensions"]["bearertokenauth/client"] = {"tokens": [value]}
        return "extensions.bearertokenauth/client.tokens[0]"
    if position == "receiver-credentials":
        scrape["authorization"] = {"credentials": value}
        return "receivers.prometheus.config.scrape_configs[0].authorization.credentials"
    if position == "receiver-password":
        scrape["basic_auth"] = {"username": "gym", "password": value}
        return "receivers.prometheus.config.scrape_configs[0].basic_auth.password"
    if position == "receiver-bearer-token":
        scrape["bearer_token"] = value
        return "receivers.prometheus.config.scrape_configs[0].bearer_token"
    if position == "receiver-proxy-header":
        scrape["proxy_connect_header"] = {name: [value]}
        return f"receivers.prometheus.config.scrape_configs[0].proxy_connect_header.{name}[0]"
    assert position == "endpoint-userinfo"
    doc["exporters"]["otlp_grpc/mirror"] = {"endpoint": f"https://gym:{value}@mirror.example:4317"}
    return "exporters.otlp_grpc/mirror.endpoint"


POSITIONS = [
    "backend-extra-header",
    "second-exporter-header",
    "header-pair-list",
    "extension-token",
    "extension-tokens",
    "receiver-credentials",
    "receiver-password",
    "receiver-bearer-token",
    "receiver-proxy-header",
    "endpoint-userinfo",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(POSITIONS), header_names(), literals())
def test_every_literal_credential_is_refused_without_its_value(
    position: str, name: str, written: tuple[str, str]
) -> None:
    secret, literal = written
    if position == "endpoint-userinfo":
        literal = re.sub(r"[^A-Za-z0-9_$\-{}:]", "", literal)  # what a URL's userinfo holds
    doc = _golden()
    path = _place(doc, position, name, literal)
    try:
        validate_collector_config(yaml.safe_dump(doc))
    except CollectorConfigError as exc:
        error = exc
    else:
        raise AssertionError(f"{position}: a literal credential passed")
    lines = [str(v) for v in error.violations]
    assert any(line.startswith(f"{path}: ") and "literal credential" in line for line in lines), (
        lines
    )
    assert secret not in str(error), "the value is never repeated"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(POSITIONS), header_names(), references())
def test_every_env_reference_in_the_same_places_is_accepted(
    position: str, name: str, reference: str
) -> None:
    doc = _golden()
    if position == "endpoint-userinfo":
        reference = reference.rpartition(" ")[2]  # a URL's userinfo holds no scheme
    _place(doc, position, name, reference)
    assert _errors(doc) == []


@pytest.mark.parametrize(
    "value",
    [
        "Bearer sk-live-abc123",
        "bearer ${env:OTEL_TOKEN}",
        "Bearer ${env:OTHER}",
        "${env:OTEL_TOKEN}",
    ],
)
@pytest.mark.parametrize("header", ["Authorization", "authorization", "AUTHORIZATION"])
def test_the_backend_authorization_is_exactly_the_tokens_bearer(header: str, value: str) -> None:
    doc = _golden()
    doc["exporters"]["otlp_http/backend"]["headers"] = {header: value}
    errors = _errors(doc)
    assert any(
        e.startswith(f"exporters.otlp_http/backend.headers.{header}: must be exactly '{BEARER}'")
        for e in errors
    ), errors
    assert "sk-live-abc123" not in "".join(errors)


def test_a_backend_without_authorization_is_refused() -> None:
    doc = _golden()
    doc["exporters"]["otlp_http/backend"]["headers"] = {"X-Scope": "gym"}
    assert any(
        e.startswith("exporters.otlp_http/backend.headers: has no Authorization header")
        for e in _errors(doc)
    )


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("http://ingest.example.net:4318", True),
        ("http://10.0.0.5:4318", True),
        ("https://ingest.example.net", False),
        ("http://localhost:4318", False),
        ("http://127.0.0.9:4318", False),
        ("http://[::1]:4318", False),
        ("HTTP://ingest.example.net:4318", True),  # the scheme in any case, as Go reads it
        ("HTTPS://ingest.example.net", False),
    ],
)
def test_no_token_in_cleartext_off_the_node(url: str, refused: bool) -> None:
    doc = _golden()
    doc["exporters"]["otlp_http/backend"]["endpoint"] = url
    errors = _errors(doc)
    cleartext = [e for e in errors if "plain http://" in e]
    assert bool(cleartext) == refused, errors
    if refused:
        assert cleartext[0].startswith("exporters.otlp_http/backend.endpoint: ")
        assert _errors(doc, allow_plain_http=True) == []


@pytest.mark.parametrize(
    ("metrics", "path"),
    [
        ({"level": "basic"}, "service.telemetry.metrics"),
        (None, "service.telemetry.metrics"),  # a block without metrics
        (
            {
                "level": "basic",
                "readers": [{"pull": {"exporter": {"prometheus": {"host": "localhost"}}}}],
            },
            "service.telemetry.metrics.readers[0].pull",
        ),
        (
            {
                "level": "detailed",
                "readers": [{"pull": {"exporter": {"prometheus": {"port": 18888}}}}],
            },
            "service.telemetry.metrics.readers[0].pull",
        ),
    ],
    ids=["level-without-readers", "no-metrics", "pull-reader", "pull-reader-other-port"],
)
def test_a_telemetry_block_binding_a_port_is_refused(metrics: Any, path: str) -> None:
    doc = _golden()
    telemetry = doc["service"]["telemetry"]
    if metrics is None:
        del telemetry["metrics"]
    else:
        telemetry["metrics"] = metrics
    errors = _errors(doc)
    assert any(e.startswith(f"{path}: ") and "bind no port" in e for e in errors), errors


def test_a_config_without_a_telemetry_block_passes_with_a_warning() -> None:
    """Hand-written configs often have none; the collector then binds localhost:8888: said."""
    doc = _golden()
    del doc["service"]["telemetry"]
    warnings = validate_collector_config(yaml.safe_dump(doc))
    assert [w.path for w in warnings] == ["service"]
    assert "localhost:8888" in warnings[0].message


def test_a_pushing_telemetry_reader_binds_nothing_and_passes() -> None:
    doc = _golden()
    doc["service"]["telemetry"]["metrics"] = {
        "level": "basic",
        "readers": [
            {
                "periodic": {
                    "interval": 5000,
                    "exporter": {
                        "otlp": {"protocol": "http/protobuf", "endpoint": "http://localhost:4318"}
                    },
                }
            }
        ],
    }
    assert _errors(doc) == []


def test_unused_components_are_warned_by_id_and_the_config_passes() -> None:
    doc = _golden()
    doc["processors"]["filter/drop_debug"] = {"error_mode": "ignore"}
    doc["exporters"]["debug"] = None
    doc["extensions"]["pprof"] = None
    warnings = validate_collector_config(yaml.safe_dump(doc))
    assert {w.path for w in warnings} == {
        "processors.filter/drop_debug",
        "exporters.debug",
        "extensions.pprof",
    }
    by_path = {w.path: w.message for w in warnings}
    assert "no pipeline uses it" in by_path["processors.filter/drop_debug"]
    assert "no pipeline uses it" in by_path["exporters.debug"]
    assert "not listed in service.extensions" in by_path["extensions.pprof"]


def test_the_builtin_renderings_pass_every_new_rule() -> None:
    """Nothing to warn about either: every component the templates define is used."""
    for path in sorted((helpers.REPO / "tests" / "golden").glob("*/*/*.yaml")):
        line = path.parent.name
        text = path.read_text(encoding="utf-8")
        doc = yaml.safe_load(text)
        plain = "collector-gateway" in text  # the fixtures' gateway on a private network
        warnings = validate_collector_config(
            text,
            helpers.line_versions()[line],
            token_env="OTEL_TOKEN",
            listen_host=doc["extensions"]["health_check"]["endpoint"]
            .rpartition(":")[0]
            .strip("[]"),
            allow_plain_http=plain,
        )
        assert warnings == [], (path, warnings)


def test_an_unused_copy_still_counts_for_the_literal_rule() -> None:
    """Unused is a warning, but a literal secret in it is still written into every job."""
    doc = copy.deepcopy(_golden())
    _mirror(doc, {"X-Api-Key": "sk-live-0123456789"})
    errors = _errors(doc)
    assert any(e.startswith("exporters.otlp_grpc/mirror.headers.X-Api-Key: ") for e in errors)
