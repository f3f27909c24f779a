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
from nemo_gym.orchestration.executors.otel._checks.go_regexp import check_go_regexp

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


def test_capture_groups_are_read_past_escapes_and_character_classes() -> None:
    assert check_go_regexp(r"\((?P<a>x)[()]").names == ("a",)
    assert check_go_regexp(r"[]()](b)").unnamed == (5,)
    assert check_go_regexp(r"[[:alpha:]((](?<n>c)\Q(\E(d)").names == ("n", "")


@pytest.mark.parametrize("version", ["0.161.0", "0.141.0"])
@pytest.mark.parametrize(
    ("kind", "body", "signal", "path", "says"),
    [
        (
            "resource",
            "attributes:\n  - {key: url, action: extract, pattern: '(a)(?P<b>c)'}",
            "traces",
            "processors.resource/x.attributes[0].pattern",
            "has a group without a name at offset 0",
        ),
        (
            "attributes",
            "include:\n  match_type: regexp\n  libraries: [{name: x, version: 'v(?=1)'}]\n"
            "actions:\n  - {key: a, action: delete}",
            "traces",
            "processors.attributes/x.include.libraries[0].version",
            r"is not a regular expression Go compiles \(error parsing regexp: invalid or "
            r"unsupported Perl syntax: `\(\?=`\)",
        ),
        (
            "filter",
            "metrics:\n  exclude:\n    match_type: regexp\n    metric_names: [ok, 'a{2,1}']",
            "metrics",
            "processors.filter/x.metrics.exclude.metric_names[1]",
            r"invalid repeat count: `\{2,1\}`",
        ),
        (
            "redaction",
            "allow_all_keys: true\nblocked_key_patterns: ['(?i)token\\K']",
            "logs",
            "processors.redaction/x.blocked_key_patterns[0]",
            r"invalid escape sequence: `\\K`",
        ),
        (
            "transform",
            "log_statements:\n  - context: log\n    statements:\n"
            '      - \'replace_pattern(body, "(\\\\d+)\\\\1", "x")\'',
            "logs",
            "processors.transform/x.log_statements[0].statements[0]",
            r"passes replace_pattern the pattern .*, which Go does not compile \(error parsing "
            r"regexp: invalid escape sequence: `\\1`\)",
        ),
    ],
)
def test_a_pattern_go_does_not_compile_is_named_with_go_s_reason(
    kind: str, body: str, signal: str, path: str, says: str, version: str
) -> None:
    test_a_refused_setting_is_named_with_its_fix(kind, body, signal, path, says, version)
