"""The checks JSON Schema cannot express, on small hand-written collector configs."""

from __future__ import annotations

import pytest

from nemo_gym.orchestration.executors.otel import CollectorConfigError, validate_collector_config

BASE = """\
receivers:
  otlp:
    protocols:
      http:
        endpoint: "localhost:4318"
  prometheus:
    config:
      scrape_configs:
        - job_name: "m"
          static_configs:
            - targets: ["localhost:8000"]
processors:
  batch:
connectors:
  forward/t:
  span_metrics:
exporters:
  debug:
extensions:
  health_check:
service:
  extensions: [{extensions}]
  telemetry:
    metrics:
      level: none
  pipelines:
{pipelines}
"""


def config(pipelines: str, extensions: str = "health_check") -> str:
    return BASE.format(pipelines=pipelines, extensions=extensions)


def violations(text: str) -> list[str]:
    with pytest.raises(CollectorConfigError) as caught:
        validate_collector_config(text)
    return [str(v) for v in caught.value.violations]


GOOD = """\
    traces/in: {receivers: [otlp], processors: [batch], exporters: [forward/t, span_metrics]}
    traces/out: {receivers: [forward/t], exporters: [debug]}
    metrics: {receivers: [otlp, prometheus, span_metrics], exporters: [debug]}
"""


def test_a_consistent_graph_passes() -> None:
    validate_collector_config(config(GOOD))


@pytest.mark.parametrize(
    ("pipelines", "extensions", "expected"),
    [
        (
            "    traces: {receivers: [otlp], exporters: [otlp_http]}\n",
            "health_check",
            "service.pipelines.traces.exporters.otlp_http: 'otlp_http' is not defined under exporters or connectors",
        ),
        (
            "    traces: {receivers: [otlp], processors: [memory_limiter], exporters: [debug]}\n",
            "health_check",
            "service.pipelines.traces.processors.memory_limiter: 'memory_limiter' is not defined under processors",
        ),
        (
            "    traces: {receivers: [otlp], exporters: [debug]}\n",
            "health_check, pprof",
            "service.extensions.pprof: extension 'pprof' is not defined",
        ),
        (
            "    traces: {receivers: [prometheus], exporters: [debug]}\n",
            "health_check",
            "service.pipelines.traces.receivers.prometheus: 'prometheus' does not handle traces",
        ),
        (
            "    traces: {receivers: [otlp], processors: [batch, batch], exporters: [debug]}\n",
            "health_check",
            "service.pipelines.traces.processors.batch: 'batch' is listed twice",
        ),
        (
            "    traces: {receivers: [otlp], exporters: [forward/t]}\n",
            "health_check",
            "connectors.forward/t: is an exporter of a traces pipeline but no pipeline receives",
        ),
        (
            "    logs: {receivers: [forward/t], exporters: [debug]}\n",
            "health_check",
            "connectors.forward/t: is a receiver of a logs pipeline but no pipeline exports to it",
        ),
        (
            "    traces: {receivers: [otlp], exporters: [forward/t]}\n    logs: {receivers: [forward/t], exporters: [debug]}\n",
            "health_check",
            "connectors.forward/t: is an exporter of a traces pipeline",
        ),
        (
            "    metrics/a: {receivers: [otlp], exporters: [span_metrics]}\n    metrics/b: {receivers: [span_metrics], exporters: [debug]}\n",
            "health_check",
            "connectors.span_metrics: is an exporter of a metrics pipeline",
        ),
        (
            "    traces/a: {receivers: [otlp, forward/t], exporters: [forward/t]}\n",
            "health_check",
            "service.pipelines: pipelines form a cycle through connectors (traces/a -> traces/a)",
        ),
    ],
)
def test_graph_violations(pipelines: str, extensions: str, expected: str) -> None:
    found = violations(config(pipelines, extensions))
    assert any(v.startswith(expected) for v in found), found


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("${env:SLURM_JOB_ID}", True),
        ("prefix $$ and $${1} and $$HOME", True),
        ("${env:OTEL_TOKEN}", False),  # the token only in the header and the tenant attribute
        ("${env:AWS_SECRET_ACCESS_KEY}", False),  # only the token's and the job id's variables
        ("${env:SLURM_JOB_ID:-0}", False),
        ("${env:${env:SLURM_JOB_ID}}", False),
        ("${HOME}", False),
        ("${env:HOME:-/tmp}", False),
        ("${1}", False),
        ("${file:/etc/passwd}", False),
        ("${env:NOT-A-NAME}", False),
        ("${env:UNTERMINATED", False),
    ],
)
def test_only_env_expansions_are_allowed(value: str, ok: bool) -> None:
    text = config(GOOD).replace('job_name: "m"', f'job_name: "{value}"')
    if ok:
        validate_collector_config(text)
    else:
        found = violations(text)
        assert any(
            v.startswith("receivers.prometheus.config.scrape_configs[0].job_name: ") for v in found
        ), found


def test_violations_are_reported_one_per_line() -> None:
    text = config("    traces: {receivers: [nope], exporters: [gone]}\n")
    with pytest.raises(CollectorConfigError) as caught:
        validate_collector_config(text, source="hand.yaml")
    lines = str(caught.value).splitlines()
    assert lines[0] == "hand.yaml is invalid:"
    assert lines[1:] == [
        "service.pipelines.traces.exporters.gone: 'gone' is not defined under exporters or connectors; define it or remove it here",
        "service.pipelines.traces.receivers.nope: 'nope' is not defined under receivers or connectors; define it or remove it here",
    ]


def test_yaml_syntax_error_names_the_line() -> None:
    with pytest.raises(CollectorConfigError) as caught:
        validate_collector_config("receivers:\n  otlp: [\n", source="broken.yaml")
    assert caught.value.violations[0].path.startswith("broken.yaml:")
    assert "fix the YAML syntax" in str(caught.value)


def test_not_a_mapping() -> None:
    assert violations("- a\n- b\n") == [
        "<root>: a collector config must be a YAML mapping of sections"
    ]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("1", "receivers: has the key 1, which YAML reads as int; quote it to make it a string"),
        (
            "true",
            "receivers: has the key True, which YAML reads as bool; quote it to make it a string",
        ),
        # The collector's YAML (Go YAML v3) reads on as text: an unknown component, not a bool.
        ("on", "receivers.on: unknown key; known keys here: otlp, prometheus"),
    ],
)
def test_keys_yaml_does_not_read_as_strings_are_named(key: str, expected: str) -> None:
    """JSON Schema only knows string keys; such a key once crashed the check with a TypeError."""
    text = config(GOOD).replace("receivers:\n  otlp:", f"receivers:\n  {key}: {{}}\n  otlp:", 1)
    assert violations(text) == [expected]


@pytest.mark.parametrize(
    "pipeline",
    [
        "{receivers: [otlp, otlp], exporters: [debug]}",
        "{receivers: [otlp], exporters: [debug, debug]}",
        "{receivers: [otlp], exporters: [forward/t, forward/t]}\n    traces/out: {receivers: [forward/t, forward/t], exporters: [debug]}",
    ],
)
def test_a_receiver_or_exporter_listed_twice_passes(pipeline: str) -> None:
    """service/pipelines/config.go, PipelineConfig.Validate refuses duplicates only among
    processors; a receiver or exporter listed twice is one node of the collector's graph."""
    validate_collector_config(config(f"    traces: {pipeline}\n"))


@pytest.mark.parametrize("level", ["none", "None", "NONE", "nOnE"])
def test_metrics_level_none_in_any_case_binds_no_port(level: str) -> None:
    """configtelemetry.Level.UnmarshalText lower-cases the level: None is none, and the
    telemetry rule (no reader binds localhost:8888) must not fire on it."""
    validate_collector_config(config(GOOD).replace("level: none", f"level: {level}"))


@pytest.mark.parametrize("level", ["Basic", "NORMAL", "Detailed"])
def test_other_metrics_levels_in_any_case_still_bind_the_port(level: str) -> None:
    found = violations(config(GOOD).replace("level: none", f"level: {level}"))
    assert [v for v in found if "localhost:8888" in v], found


_RESOURCE = """\
processors:
  resource:
    attributes:
      - {{key: a, {value}action: {action}}}
  batch:"""


@pytest.mark.parametrize("action", ["upsert", "UPSERT", "Insert", "DELETE"])
def test_attribute_actions_are_read_in_any_case(action: str) -> None:
    """attraction.go, NewAttrProc lower-cases the action before it reads it (and then refuses
    a value with delete, so that one is written without)."""
    text = config(GOOD.replace("processors: [batch]", "processors: [batch, resource]"))
    value = "" if action.lower() == "delete" else "value: b, "
    validate_collector_config(
        text.replace("processors:\n  batch:", _RESOURCE.format(action=action, value=value))
    )


def test_an_unknown_attribute_action_is_refused_in_any_case() -> None:
    text = config(GOOD.replace("processors: [batch]", "processors: [batch, resource]"))
    found = violations(
        text.replace("processors:\n  batch:", _RESOURCE.format(action="Smash", value="value: b, "))
    )
    assert found == [
        "processors.resource.attributes[0].action: must be one of: insert, update, upsert, "
        "delete, hash, extract, convert (any case)"
    ]


_FILE = "exporters:\n  file:\n    path: ./x.jsonl\n    flush_interval: {interval}\n  debug:"


@pytest.mark.parametrize("interval", ["0s", "0", "1s", "250ms"])
def test_file_flush_interval_zero_means_the_default(interval: str) -> None:
    """fileexporter's Config.Validate refuses only a negative flush_interval; 0 means 1s."""
    text = config(GOOD.replace("exporters: [debug]}\n", "exporters: [debug, file]}\n", 1))
    validate_collector_config(text.replace("exporters:\n  debug:", _FILE.format(interval=interval)))


def test_a_negative_file_flush_interval_is_refused() -> None:
    text = config(GOOD.replace("exporters: [debug]}\n", "exporters: [debug, file]}\n", 1))
    found = violations(text.replace("exporters:\n  debug:", _FILE.format(interval="-1s")))
    assert found == [
        "exporters.file.flush_interval: must be a duration that is not negative, such as 0s or 30s"
    ]


# Plain scalars as the collector's YAML library (Go YAML v3, resolve.go) reads them.
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("TRUE", True),
        ("False", False),
        ("tRUE", "tRUE"),
        ("yes", "yes"),
        ("on", "on"),
        ("off", "off"),
        ("y", "y"),
        ("~", None),
        ("Null", None),
        ("1:30", "1:30"),
        ("0o17", 15),
        ("017", 15),
        ("08", 8.0),
        ("0x1F", 31),
        ("-0b101", -5),
        ("1_000", 1000),
        ("1e3", 1000.0),
        ("1.5", 1.5),
        (".5", 0.5),
        ("+.inf", float("inf")),
        ("inf", "inf"),
        ("1e400", "1e400"),
        ("18446744073709551615", 18446744073709551615),
        ("+18446744073709551615", 1.8446744073709552e19),
        ("0x1FFFFFFFFFFFFFFFFFF", "0x1FFFFFFFFFFFFFFFFFF"),
        ("2024-02-31", "2024-02-31"),
        ("=", "="),
    ],
)
def test_plain_scalars_resolve_as_go_yaml_does(text: str, value: object) -> None:
    from nemo_gym.orchestration.executors.otel._common.go_yaml_scalars import go_scalar

    resolved = go_scalar(text)[1]
    assert resolved == value and type(resolved) is type(value)


def test_timestamps_resolve_as_go_yaml_does() -> None:
    import datetime

    from nemo_gym.orchestration.executors.otel._common.go_yaml_scalars import go_scalar

    assert go_scalar("2001-1-2")[1] == datetime.date(2001, 1, 2)
    assert go_scalar("2001-12-14t21:59:43.1+01:00")[1] == datetime.datetime(
        2001, 12, 14, 21, 59, 43, 100000, datetime.timezone(datetime.timedelta(hours=1))
    )


_DEBUG_B = "exporters:\n  debug/b:\n    use_internal_logger: {value}\n  debug:"


@pytest.mark.parametrize("value", ["yes", "on", "off", "Off", "y", "No"])
def test_yaml_1_1_booleans_are_text_to_the_collector(value: str) -> None:
    """The collector refuses them ('expected type bool, got unconvertible type string')."""
    text = config(GOOD.replace("exporters: [debug]}", "exporters: [debug, debug/b]}", 1))
    found = violations(text.replace("exporters:\n  debug:", _DEBUG_B.format(value=value)))
    assert found == ["exporters.debug/b.use_internal_logger: must be true or false, not a string"]


@pytest.mark.parametrize("value", ["1e3", "1.5", "0o17", "017", "0x10", "1_000"])
def test_an_integer_option_takes_any_number_go_yaml_reads(value: str) -> None:
    """mapstructure sets a Go integer from a float (truncated), and Go YAML reads 0o17 as 15."""
    validate_collector_config(
        config(GOOD).replace("  batch:\n", f"  batch:\n    send_batch_size: {value}\n", 1)
    )


@pytest.mark.parametrize("value", ["1:30", "lots", "-1.5"])
def test_an_integer_option_refuses_text_and_negative_numbers(value: str) -> None:
    found = violations(
        config(GOOD).replace("  batch:\n", f"  batch:\n    send_batch_size: {value}\n", 1)
    )
    assert len(found) == 1 and found[0].startswith("processors.batch.send_batch_size: must be")


def test_the_submit_config_keeps_yaml_1_1() -> None:
    """Only collector configs are read the collector's way; the submit config is PyYAML's."""
    from nemo_gym.orchestration.executors.otel._common.yaml_loader import parse_yaml

    def error(path: str, message: str) -> CollectorConfigError:
        raise AssertionError(f"{path}: {message}")

    assert parse_yaml("a: off\nb: 0o17\n", "x", error) == {"a": False, "b": "0o17"}
    assert parse_yaml("a: off\nb: 0o17\n", "x", error, collector=True) == {"a": "off", "b": 15}


# Components' own Validate rules that compare two options (_checks/component_rules.py).
@pytest.mark.parametrize(
    ("batch", "expected"),
    [
        ("send_batch_size: 100\n    send_batch_max_size: 50", "send_batch_max_size: is 50, below"),
        ("send_batch_max_size: 100", "send_batch_max_size: is 100, below send_batch_size (8192,"),
        ("metadata_keys: [a, A]", "metadata_keys[1]: repeats entry 0"),
        ("timeout: -1s", "timeout: must be a duration that is not negative"),
    ],
)
def test_batch_rules(batch: str, expected: str) -> None:
    found = violations(config(GOOD).replace("  batch:\n", f"  batch:\n    {batch}\n", 1))
    assert len(found) == 1 and found[0].startswith(f"processors.batch.{expected}"), found


@pytest.mark.parametrize(
    "batch",
    [
        "send_batch_size: 100\n    send_batch_max_size: 100",
        "send_batch_size: 100\n    send_batch_max_size: 0",
        "send_batch_max_size: 8192",
        "metadata_keys: [a, b]",
        "timeout: 0s",
    ],
)
def test_batch_rules_pass(batch: str) -> None:
    validate_collector_config(config(GOOD).replace("  batch:\n", f"  batch:\n    {batch}\n", 1))


_JOB = '        - job_name: "m"\n'


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (
            "          scrape_interval: 5s\n          scrape_timeout: 10s\n",
            "scrape_configs[0].scrape_timeout: is longer than the job's scrape_interval",
        ),
        (
            "          scrape_timeout: 2m\n",
            "scrape_configs[0].scrape_timeout: is longer than the job's scrape_interval",
        ),
        (
            '        - job_name: "m"\n          static_configs: [{targets: ["localhost:9"]}]\n',
            "scrape_configs[1].job_name: is the job_name of scrape_configs[0] too",
        ),
    ],
)
def test_prometheus_rules(job: str, expected: str) -> None:
    # A whole job goes before the first, more keys into it.
    added = job + _JOB if job.startswith("        - ") else _JOB + job
    found = violations(config(GOOD).replace(_JOB, added, 1))
    assert found == [v for v in found if v.startswith("receivers.prometheus.config.")], found
    assert any(v.startswith(f"receivers.prometheus.config.{expected}") for v in found), found


@pytest.mark.parametrize(
    "job",
    [
        "          scrape_interval: 5s\n          scrape_timeout: 5s\n",
        "          scrape_timeout: 1m\n",  # the global interval's default
        "          scrape_interval: 1h\n          scrape_timeout: 2m\n",
    ],
)
def test_prometheus_rules_pass(job: str) -> None:
    validate_collector_config(config(GOOD).replace(_JOB, _JOB + job, 1))


_OTLP_GRPC = """\
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: "localhost:4317"
exporters:
  otlp:
    endpoint: {endpoint}
{extra}service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces: {{receivers: [otlp], exporters: [otlp]}}
"""


def test_an_alias_is_renamed_only_in_its_own_section() -> None:
    """The current line's 'otlp' exporter (otlp_grpc) beside an 'otlp' receiver: the
    receiver's reference keeps its name."""
    with pytest.warns(Warning, match="deprecated name of 'otlp_grpc'"):
        validate_collector_config(_OTLP_GRPC.format(endpoint="localhost:4317", extra=""))


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("localhost", "has no port"),
        ('"::1:4317"', "has too many colons"),
        ("http://localhost:4317/v1", "has a port that is not a number"),
        ('"[::1]x:4317"', "has no port"),
        ("dns:///localhost", "has no port"),
        ('"unix://"', "names no socket after unix://"),
        ('"dns:///"', "names no host after its scheme"),
    ],
)
def test_grpc_exporter_endpoint(endpoint: str, expected: str) -> None:
    with pytest.warns(Warning):
        found = violations(_OTLP_GRPC.format(endpoint=endpoint, extra=""))
    assert found == [f"exporters.otlp.endpoint: {expected}"] or (
        len(found) == 1 and found[0].startswith(f"exporters.otlp.endpoint: {expected}")
    ), found


@pytest.mark.parametrize(
    "endpoint",
    ['"[::1]:4317"', "https://collector:4317", "dns://8.8.8.8/collector:4317", "unix:///s.sock"],
)
def test_grpc_exporter_endpoint_passes(endpoint: str) -> None:
    with pytest.warns(Warning):
        validate_collector_config(_OTLP_GRPC.format(endpoint=endpoint, extra=""))


@pytest.mark.parametrize(
    ("value", "nanoseconds"),
    [("1h30m", 5400 * 10**9), ("1.5s", 1_500_000_000), ("-2ms", -2_000_000), ("0", 0), (7, 7)],
)
def test_go_duration(value: object, nanoseconds: int) -> None:
    from nemo_gym.orchestration.executors.otel._checks.component_rules import _go_duration

    assert _go_duration(value) == nanoseconds


@pytest.mark.parametrize("value", ["", "1", "s", "1x", "1.5", True, 1.5])
def test_go_duration_refuses(value: object) -> None:
    from nemo_gym.orchestration.executors.otel._checks.component_rules import _go_duration

    assert _go_duration(value) is None


def test_grpc_exporter_endpoint_with_a_reference_is_not_judged() -> None:
    """The collector expands ${env:...} before its Validate reads the endpoint."""
    with pytest.warns(Warning):
        validate_collector_config(
            _OTLP_GRPC.format(endpoint="'${env:SLURM_JOB_ID}:4317'", extra="")
        )


_ATTRIBUTES_MATCH = """\
receivers: {{otlp: {{protocols: {{grpc: {{endpoint: "localhost:4317"}}}}}}}}
processors:
  attributes:
    include: {match}
    actions: [{{key: a, action: delete}}]
exporters: {{debug: {{}}}}
service:
  telemetry: {{metrics: {{level: none}}}}
  pipelines:
    traces: {{receivers: [otlp], processors: [attributes], exporters: [debug]}}
"""


@pytest.mark.parametrize(
    ("match", "expected"),
    [
        ("{services: [a]}", "processors.attributes.include.match_type: must be strict or regexp"),
        ("{match_type: strict}", "processors.attributes.include: names nothing to match traces"),
    ],
)
def test_attributes_match_blocks(match: str, expected: str) -> None:
    found = violations(_ATTRIBUTES_MATCH.format(match=match))
    assert len(found) == 1 and found[0].startswith(expected), found


@pytest.mark.parametrize(
    "match", ["{match_type: strict, services: [a]}", "{match_type: other, attributes: [{key: a}]}"]
)
def test_attributes_match_blocks_pass(match: str) -> None:
    validate_collector_config(_ATTRIBUTES_MATCH.format(match=match))
