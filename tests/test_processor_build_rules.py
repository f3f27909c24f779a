"""Checks the collector runs when it builds the attributes and filter processors, mirrored by the
package: an extract pattern's groups (attraction.go NewAttrProc), match properties of another
signal (filterconfig ValidateForSpans / ValidateForLogs), a filter's severity name (filterprocessor
config.go logSeverity.validate). Each refusal names the key and the fix; the accepted cases are
the neighbours the collector accepts."""

from __future__ import annotations

import re

import pytest
from support import helpers

from nemo_gym.orchestration.executors.otel import CollectorConfigError, validate_collector_config
from nemo_gym.orchestration.executors.otel._checks.attributes_rules import groups

EXTRACT = "actions:\n  - key: http.url\n    action: extract\n    pattern: '{pattern}'"
LOG_MATCH = (
    "include:\n  match_type: regexp\n  log_bodies: ['AUTH.*']\n"
    "actions:\n  - {key: token, action: delete}"
)
UNNAMED = r"^(?P<scheme>.*):\/\/(?P<host>[^/]*)(\?|\&)"
SPAN_MATCH = (
    "exclude:\n  match_type: strict\n  span_names: [a]\nactions:\n  - {key: token, action: delete}"
)


def _validate(kind: str, body: str, signal: str, version: str = "0.161.0") -> None:
    text = helpers.one_processor_config(kind, body, signal)
    validate_collector_config(text, collector_version=version)


@pytest.mark.parametrize("version", ["0.161.0", "0.141.0"])
@pytest.mark.parametrize(
    ("kind", "body", "signal", "path", "says"),
    [
        (
            "attributes",
            EXTRACT.format(pattern=UNNAMED),
            "traces",
            "processors.attributes/x.actions[0].pattern",
            f"has a group without a name at offset {UNNAMED.rindex('(')}; "
            r".* name it \(\?P<name>...\) or make it "
            r"non-capturing \(\?:...\)",
        ),
        (
            "attributes",
            EXTRACT.format(pattern=r"^[a-z]+$"),
            "traces",
            "processors.attributes/x.actions[0].pattern",
            r"has no named group; .* write one as \(\?P<name>...\)",
        ),
        (
            "attributes",
            LOG_MATCH,
            "traces",
            "processors.attributes/x.include.log_bodies",
            "matches on what traces do not carry, and the processor is in the traces pipeline "
            "'traces'; remove log_bodies",
        ),
        (
            "attributes",
            SPAN_MATCH,
            "logs",
            "processors.attributes/x.exclude.span_names",
            "matches on what logs do not carry, .* remove span_names",
        ),
        (
            "filter",
            "logs:\n  include:\n    severity_number: {min: INVALID_SEVERITY}",
            "logs",
            "processors.filter/x.logs.include.severity_number.min",
            "must be a severity: TRACE, DEBUG, INFO, WARN, ERROR or FATAL",
        ),
    ],
)
def test_a_refused_setting_is_named_with_its_fix(
    kind: str, body: str, signal: str, path: str, says: str, version: str
) -> None:
    with pytest.raises(CollectorConfigError) as caught:
        _validate(kind, body, signal, version)
    lines = [line.strip() for line in str(caught.value).splitlines()]
    assert any(line.startswith(path + ":") and re.search(says, line) for line in lines), lines


@pytest.mark.parametrize(
    ("kind", "body", "signal"),
    [
        (
            "attributes",
            EXTRACT.format(pattern=r"^(?P<scheme>[a-z(]+):(?:\/\/)(?i)(?P<x>.*)"),
            "traces",
        ),
        ("attributes", EXTRACT.format(pattern=r"^[(](?P<inner>[^)]*)\)$"), "traces"),
        ("attributes", LOG_MATCH, "logs"),
        ("attributes", SPAN_MATCH, "traces"),
        ("filter", "logs:\n  include:\n    severity_number: {min: info2}", "logs"),
        ("filter", "logs:\n  include:\n    severity_number: {min: '24'}", "logs"),
    ],
)
def test_the_neighbours_the_collector_accepts_pass(kind: str, body: str, signal: str) -> None:
    for version in ("0.161.0", "0.141.0"):
        _validate(kind, body, signal, version)


def test_groups_skips_escapes_and_character_classes() -> None:
    assert groups(r"\((?P<a>x)[()]") == (1, [])
    assert groups(r"[]()](b)") == (0, [5])
    assert groups(r"[[:alpha:]((](?<n>c)") == (1, [])
