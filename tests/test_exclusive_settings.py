"""Exclusive settings of the filter and transform processors, as their own Validate and
Unmarshal refuse them (processor/filterprocessor/config.go, processor/transformprocessor/
config.go, v0.161.0): one message naming the key and the way out."""

from __future__ import annotations

import pytest

from nemo_gym.orchestration.executors.otel import CollectorConfigError, validate_collector_config

PIPELINE = """receivers:
  otlp:
    protocols:
      grpc:
processors:
  filter/x:
{body}
exporters:
  debug:
service:
  pipelines:
    logs:
      receivers: [otlp]
      processors: [filter/x]
      exporters: [debug]
"""


def _check(body: str) -> None:
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    validate_collector_config(PIPELINE.format(body=indented), collector_version="0.161.0")


@pytest.mark.parametrize(
    ("body", "path", "says"),
    [
        (
            "log_conditions: ['log.body == \"x\"']\nlogs:\n  log_record: ['body == \"x\"']",
            "processors.filter/x",
            "log_conditions cannot be used beside logs.resource, .log_record",
        ),
        (
            "logs:\n  log_record: ['body == \"x\"']\n  include: {match_type: strict, bodies: [x]}",
            "processors.filter/x.logs",
            "resource and log_record cannot be used beside include or exclude",
        ),
        (
            "log_conditions:\n  -\n  - 'log.body == \"y\"'",
            "processors.filter/x.log_conditions[0]",
            "is empty; write a condition or remove the entry",
        ),
        (
            "spans:\n  exclude: {match_type: regexp}",
            "processors.filter/x.spans.exclude",
            "names nothing to match spans on",
        ),
        (
            "log_conditions:\n  - context: log\n    conditions: ['body == \"x\"']\n  - 'log.body == \"y\"'",
            "processors.filter/x.log_conditions",
            "holds condition strings and groups with a context; use one style per list",
        ),
    ],
    ids=[
        "inferred-beside-per-context",
        "per-context-beside-include",
        "empty-condition",
        "span-matcher-matching-nothing",
        "mixed-styles",
    ],
)
def test_exclusive_filter_settings_are_refused(body: str, path: str, says: str) -> None:
    with pytest.raises(CollectorConfigError) as caught:
        _check(body)
    assert any(v.path == path and says in v.message for v in caught.value.violations), caught.value


@pytest.mark.parametrize(
    "body",
    [
        'log_conditions: [\'log.body == "x"\', \'log.attributes["k"] == "v"\']',
        "log_conditions:\n  - context: log\n    conditions: ['body == \"x\"']",
        "logs:\n  log_record: ['body == \"x\"']\n  include: null",
        "logs:\n  include: {match_type: strict, bodies: [x]}",
        "logs: null\nlog_conditions: ['log.body == \"x\"']",
    ],
    ids=["flat-style", "with-context", "null-include", "include-only", "null-logs"],
)
def test_one_style_at_a_time_is_accepted(body: str) -> None:
    _check(body)


def test_transform_statements_in_two_styles_are_refused() -> None:
    body = (
        "log_statements:\n  - 'set(log.body, \"x\")'\n  - context: log\n"
        "    statements: ['set(body, \"y\")']"
    )
    text = PIPELINE.replace("filter/x", "transform/x").format(
        body="\n".join("    " + line for line in body.splitlines())
    )
    with pytest.raises(CollectorConfigError) as caught:
        validate_collector_config(text, collector_version="0.161.0")
    assert any(
        v.path == "processors.transform/x.log_statements" and "use one style per list" in v.message
        for v in caught.value.violations
    ), caught.value


@pytest.mark.parametrize(
    ("v2", "refused"),
    [
        ("http: {endpoint: 'localhost:13133'}", True),
        ("http: null", False),
        ("endpoint: 'localhost:13133'", False),
    ],
)
def test_health_check_v2_settings_need_a_feature_gate_the_step_never_sets(
    v2: str, refused: bool
) -> None:
    text = (
        PIPELINE.replace("processors:\n  filter/x:\n{body}\n", "").replace(
            "      processors: [filter/x]\n", ""
        )
        + f"  extensions: [health_check]\nextensions:\n  health_check:\n    {v2}\n"
    )
    if not refused:
        validate_collector_config(text, collector_version="0.161.0")
        return
    with pytest.raises(CollectorConfigError) as caught:
        validate_collector_config(text, collector_version="0.161.0")
    assert any(
        v.path == "extensions.health_check"
        and "extension.healthcheck.useComponentStatus" in v.message
        for v in caught.value.violations
    ), caught.value
