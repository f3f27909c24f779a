"""What the real collector's ``validate`` says of our configs, and whether our checks agree.

Checking rendered output against our own schema proves nothing on its own; these tests put every
rendered config and a corpus of mutations before the real collector of each template line
(``tools/build-otelcol``) and compare its verdict with ``validate_collector_config``.
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from support import helpers
from support.collector_corpus import (
    NOT_JUDGED_BY_SCHEMA,
    SECTIONS,
    STRICTER_ON_PURPOSE,
    Case,
    blind_spot,
    corpus,
    rendered_cases,
    stricter_reason,
)
from support.otelcol import collector_binary, run_validate

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import (
    CollectorConfigError,
    render_collector_config,
    validate_collector_config,
)

pytestmark = pytest.mark.collector

LINES = tuple(helpers.line_versions())
# Each line's platform collector: the templates' components and those platform teams add.
PLATFORM = {line: f"{line}-platform" for line in LINES}
# Each line's output on each line's binary, as the table of lines states it
# (docs/guide/template-lines.md):
# (rendered by, run on) -> accepted. A legacy config loads on the current collector through the
# deprecated aliases otlphttp/spanmetrics; the legacy collector knows no otlp_http/span_metrics.
CROSS_LINE = {
    ("legacy", "legacy"): True,
    ("current", "current"): True,
    ("legacy", "current"): True,
    ("current", "legacy"): False,
}


# Built in although no template uses it: the debug exporter, to look at a pipeline by hand.
EXTRA_COMPONENTS = {("exporters", "debug")}


def _validate_each(
    runs: list[tuple[Path, str]], tmp_path: Path
) -> list[subprocess.CompletedProcess[str]]:
    """The real ``validate`` of each (binary, config text), two at a time, in order."""

    def validate(indexed: tuple[int, tuple[Path, str]]) -> subprocess.CompletedProcess[str]:
        index, (binary, text) = indexed
        path = tmp_path / f"case-{index}.yaml"
        path.write_text(text, encoding="utf-8")
        return run_validate(binary, path)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(validate, enumerate(runs)))


def _package_accepts(case: Case) -> bool:
    try:
        validate_collector_config(case.text, helpers.line_versions()[case.line])
    except CollectorConfigError:
        return False
    return True


@pytest.fixture(scope="module")
def binaries() -> dict[str, Path]:
    return {name: collector_binary(name) for name in (*LINES, *PLATFORM.values())}


@pytest.mark.parametrize("case", list(rendered_cases()), ids=lambda case: case.id)
def test_every_rendered_config_validates_on_its_line(
    case: Case, binaries: dict[str, Path], tmp_path: Path
) -> None:
    [result] = _validate_each([(binaries[case.line], case.text)], tmp_path)
    assert result.returncode == 0, f"{case.id}: {result.stderr[-2000:]}"


@pytest.mark.parametrize("line", LINES)
def test_manifest_builds_exactly_what_the_templates_use(
    line: str, binaries: dict[str, Path]
) -> None:
    """The small collector a platform team builds from the manifest lacks nothing and carries
    nothing extra (but the debug exporter)."""
    listing = subprocess.run(
        [str(binaries[line]), "components"], capture_output=True, text=True, check=True
    )
    components = yaml.safe_load(listing.stdout)
    built = {(s, entry["name"]) for s in SECTIONS for entry in components.get(s) or []}
    used = {
        (section, component.split("/")[0])
        for case in rendered_cases()
        if case.line == line
        for section, body in yaml.safe_load(case.text).items()
        if section in SECTIONS
        for component in body
    }
    assert built == used | EXTRA_COMPONENTS


@pytest.mark.parametrize(("rendered_by", "run_on"), list(CROSS_LINE))
def test_each_line_on_the_other_lines_binary(
    rendered_by: str, run_on: str, binaries: dict[str, Path], tmp_path: Path
) -> None:
    runs = [(binaries[run_on], c.text) for c in rendered_cases() if c.line == rendered_by]
    results = _validate_each(runs, tmp_path)
    verdicts = [result.returncode == 0 for result in results]
    if not CROSS_LINE[rendered_by, run_on]:
        for result in results:
            assert "unknown type" in result.stderr, result.stderr[-2000:]
    assert set(verdicts) == {CROSS_LINE[rendered_by, run_on]}, (
        f"{rendered_by} configs on the {run_on} collector: {verdicts}"
    )


def test_package_and_collector_agree_on_the_corpus(
    binaries: dict[str, Path], tmp_path: Path
) -> None:
    """The one agreement count: the line's corpus on its collector, the platform components
    on the platform collector. Stricter on purpose and not judged by a schema are listed."""
    cases = corpus()
    assert len(cases) >= 150
    results = _validate_each([(binaries[c.binary], c.text) for c in cases], tmp_path)
    collector = [result.returncode == 0 for result in results]
    disagreements = []
    listed_seen = set()
    for case, collector_ok in zip(cases, collector, strict=True):
        package_ok = _package_accepts(case)
        if stricter_reason(case) is not None:
            listed_seen.add(case.id)
            if not (collector_ok and not package_ok):
                disagreements.append(f"{case.id}: listed as stricter on purpose, but it is not")
        elif blind_spot(case) is not None:
            listed_seen.add(case.id)
            if not (package_ok and not collector_ok):
                disagreements.append(f"{case.id}: listed as not judged by a schema, but it is")
        elif package_ok != collector_ok:
            disagreements.append(
                f"{case.id}: package {'accepts' if package_ok else 'rejects'}, "
                f"collector {'accepts' if collector_ok else 'rejects'}"
            )
    agreed = len(cases) - len(disagreements)
    stricter = sum(1 for c in cases if stricter_reason(c) is not None)
    blind = sum(1 for c in cases if blind_spot(c) is not None)
    platform = sum(1 for c in cases if c.collector)
    print(
        f"corpus: {len(cases)} configs ({platform} on the platform collectors), {agreed} judged "
        f"as listed ({stricter} stricter on purpose, {blind} not judged by a schema), "
        f"{sum(collector)} valid and {len(cases) - sum(collector)} invalid per the collector"
    )
    assert not disagreements, "\n".join(disagreements)
    assert listed_seen == set(STRICTER_ON_PURPOSE) | set(NOT_JUDGED_BY_SCHEMA), (
        "a listed case left the corpus"
    )


def test_a_line_added_by_override_works_on_the_real_collector(
    binaries: dict[str, Path], tmp_path: Path
) -> None:
    """The promise to an older cluster (docs/guide/overriding-templates.md): a platform team
    adds a line by override (its own line.yaml with the old component names, reusing the
    built-in legacy schema), and every combination renders, passes the package's checks, validates through the same line, and is
    accepted by the real collector's ``validate``."""
    overrides = tmp_path / "templates"
    helpers.add_line(overrides, "older", "0.120.0", "0.130.0")
    config = SubmitConfig.from_yaml(helpers.EXAMPLE)
    benchmark = next(iter(config.driver.benchmarks))
    runs = []
    for combination in helpers.COMBINATIONS:
        text = render_collector_config(
            helpers.variant(config, "0.125.0", combination),
            benchmark,
            helpers.job_dir(config, benchmark),
            template_dirs=[overrides],
        )
        assert "line older" in text.splitlines()[1]
        validate_collector_config(text, "0.125.0", template_dirs=[overrides])
        runs.append((binaries["legacy"], text))
    for combination, result in zip(
        helpers.COMBINATIONS, _validate_each(runs, tmp_path), strict=True
    ):
        assert result.returncode == 0, f"older/{combination}: {result.stderr[-2000:]}"


def _hand_written(
    processors: str = "", exporters: str = "", pipeline: str = "", level: str = "none"
) -> str:
    """A small config on the minimal lines' components, the probe's shape: ``processors`` and
    ``exporters`` are extra component bodies, ``pipeline`` the traces pipeline (flow style)."""
    return (
        'receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: "localhost:4317"\n'
        f"processors:\n  batch:\n{processors}"
        f"exporters:\n  debug:\n{exporters}"
        f"service:\n  telemetry:\n    metrics:\n      level: {level}\n"
        f"  pipelines:\n    traces: {pipeline or '{receivers: [otlp], exporters: [debug]}'}\n"
    )


# Hand-written configs the package once judged unlike the collector (a probe of `validate`
# against the binaries), with the collector's verdict: id -> (text, accepted on both lines, or
# a line -> accepted mapping).
AGREEMENT_CASES = {
    # exporter/fileexporter/config.go, Config.Validate: only a negative flush_interval is refused.
    "file-flush-interval-zero": (
        _hand_written(
            exporters="  file:\n    path: ./x.json\n    flush_interval: 0s\n",
            pipeline="{receivers: [otlp], exporters: [file]}",
        ),
        True,
    ),
    "file-flush-interval-negative": (
        _hand_written(
            exporters="  file:\n    path: ./x.json\n    flush_interval: -1s\n",
            pipeline="{receivers: [otlp], exporters: [file]}",
        ),
        False,
    ),
    # service/pipelines/config.go, PipelineConfig.Validate: duplicates only among processors.
    "receiver-listed-twice": (
        _hand_written(pipeline="{receivers: [otlp, otlp], exporters: [debug]}"),
        True,
    ),
    "exporter-listed-twice": (
        _hand_written(pipeline="{receivers: [otlp], exporters: [debug, debug]}"),
        True,
    ),
    "processor-listed-twice": (
        _hand_written(
            pipeline="{receivers: [otlp], processors: [batch, batch], exporters: [debug]}"
        ),
        False,
    ),
    # configtelemetry.Level.UnmarshalText lower-cases the level; attraction's NewAttrProc the action.
    "metrics-level-None": (_hand_written(level="None"), True),
    "metrics-level-NONE": (_hand_written(level="NONE"), True),
    "metrics-level-Nope": (_hand_written(level="Nope"), False),
    "resource-action-UPSERT": (
        _hand_written(
            processors="  resource:\n    attributes:\n      - {key: a, value: b, action: UPSERT}\n",
            pipeline="{receivers: [otlp], processors: [resource], exporters: [debug]}",
        ),
        True,
    ),
    "resource-action-Smash": (
        _hand_written(
            processors="  resource:\n    attributes:\n      - {key: a, value: b, action: Smash}\n",
            pipeline="{receivers: [otlp], processors: [resource], exporters: [debug]}",
        ),
        False,
    ),
}
# Scalars as Go YAML v3 reads them (the package once read them by YAML 1.1): a boolean option
# takes only true/True/TRUE/false/False/FALSE; an integer option any number (mapstructure
# truncates a float), and 1:30 or a hexadecimal number past 64 bits is text.
AGREEMENT_CASES.update(
    {
        f"debug-use-internal-logger-{value}": (
            _hand_written(exporters=f"  debug/b:\n    use_internal_logger: {value}\n").replace(
                "exporters: [debug]", "exporters: [debug, debug/b]"
            ),
            value in ("true", "True", "FALSE"),
        )
        for value in ("true", "True", "FALSE", "yes", "on", "off", "Off", "y", "No")
    }
)
AGREEMENT_CASES.update(
    {
        f"batch-send-batch-size-{value}": (
            _hand_written(
                processors=f"  batch/b:\n    send_batch_size: {value}\n",
                pipeline="{receivers: [otlp], processors: [batch/b], exporters: [debug]}",
            ),
            accepted,
        )
        for value, accepted in (
            ("1e3", True),
            ("1.5", True),
            ("0o17", True),
            ("017", True),
            ("08", True),
            ("0x10", True),
            ("1_000", True),
            ("1:30", False),
            ("99999999999999999999999", True),  # past 64 bits: a float
            ("0x1FFFFFFFFFFFFFFFFFF", False),  # past 64 bits and no float: text
        )
    }
)
AGREEMENT_CASES.update(
    {
        f"file-path-{name}": (
            _hand_written(
                exporters=f"  file:\n    path: {value}\n",
                pipeline="{receivers: [otlp], exporters: [file]}",
            ),
            accepted,
        )
        for name, value, accepted in (
            ("timestamp", "2001-1-2", False),  # a time.Time, which a string option refuses
            ("no-such-date", "2024-02-31", True),  # no timestamp: text
        )
    }
)


def _scrape(jobs: str, global_config: str = "") -> str:
    """The probe's shape with a prometheus receiver: ``jobs`` are scrape_configs items."""
    return (
        f"receivers:\n  prometheus:\n    config:\n{global_config}      scrape_configs:\n{jobs}"
        "exporters:\n  debug:\nservice:\n  telemetry:\n    metrics:\n      level: none\n"
        "  pipelines:\n    metrics: {receivers: [prometheus], exporters: [debug]}\n"
    )


def _job(name: str = "a", extra: str = "") -> str:
    return f"        - job_name: {name}\n{extra}          static_configs: [{{targets: ['localhost:9100']}}]\n"


# Components' own Validate rules that compare two options (batchprocessor Config.Validate;
# prometheus config.go, ScrapeConfig.Validate and the job names' check).
AGREEMENT_CASES.update(
    {
        f"batch-{name}": (
            _hand_written(
                processors=f"  batch/b:\n{body}",
                pipeline="{receivers: [otlp], processors: [batch/b], exporters: [debug]}",
            ),
            accepted,
        )
        for name, body, accepted in (
            ("max-below-size", "    send_batch_size: 10\n    send_batch_max_size: 5\n", False),
            ("max-zero", "    send_batch_size: 10\n    send_batch_max_size: 0\n", True),
            ("max-below-default-size", "    send_batch_max_size: 100\n", False),
            ("max-at-default-size", "    send_batch_max_size: 8192\n", True),
            ("metadata-keys-repeated", "    metadata_keys: [a, A]\n", False),
            ("timeout-negative", "    timeout: -1s\n", False),
            ("timeout-zero", "    timeout: 0s\n", True),
        )
    }
)
AGREEMENT_CASES.update(
    {
        "prometheus-job-name-twice": (_scrape(_job() + _job()), False),
        "prometheus-timeout-over-interval": (
            _scrape(_job(extra="          scrape_interval: 5s\n          scrape_timeout: 10s\n")),
            False,
        ),
        "prometheus-timeout-at-default-interval": (
            _scrape(_job(extra="          scrape_timeout: 1m\n")),
            True,
        ),
        "prometheus-timeout-over-default-interval": (
            _scrape(_job(extra="          scrape_timeout: 2m\n")),
            False,
        ),
        "prometheus-timeout-under-global-interval": (
            _scrape(
                _job(extra="          scrape_timeout: 2m\n"),
                "      global:\n        scrape_interval: 5m\n",
            ),
            True,
        ),
        "prometheus-global-timeout-over-default-interval": (
            _scrape(_job(), "      global:\n        scrape_timeout: 2m\n"),
            False,
        ),
    }
)


def _otlp_exporter(body: str) -> str:
    """The probe's shape with a gRPC OTLP exporter (``otlp``: the legacy line's name, the current
    line's deprecated alias of otlp_grpc) of ``body``, indented as its options."""
    return _hand_written(
        exporters="  otlp:\n    endpoint: localhost:4317\n" + body,
        pipeline="{receivers: [otlp], exporters: [otlp]}",
    )


def _processor(name: str, body: str, signal: str = "traces") -> str:
    """The probe's shape with processor ``name`` of ``body`` in a ``signal`` pipeline."""
    return _hand_written(processors=f"  {name}:\n{body}").replace(
        "    traces: {receivers: [otlp], exporters: [debug]}",
        f"    {signal}: {{receivers: [otlp], processors: [{name}], exporters: [debug]}}",
    )


def _extension(name: str, body: str) -> str:
    """The probe's shape with extension ``name`` of ``body``, enabled in the service."""
    return f"extensions:\n  {name}:\n{body}" + _hand_written().replace(
        "service:\n", f"service:\n  extensions: [{name}]\n"
    )


def _grpc_receiver(body: str) -> str:
    """The probe's shape with ``body`` added to the OTLP receiver's gRPC protocol."""
    return _hand_written().replace(
        '        endpoint: "localhost:4317"\n', '        endpoint: "localhost:4317"\n' + body
    )


# Components' own Validate rules that one schema keyword states (collector/schema/common.yaml):
# configretry, exporterhelper's timeout, configtls, configgrpc's server sizes, the probabilistic
# sampler's enums, delta_to_cumulative, cumulative_to_delta, file_storage and bearertokenauth.
AGREEMENT_CASES.update(
    {
        **{
            f"otlp-exporter-{name}": (_otlp_exporter(body), accepted)
            for name, body, accepted in (
                (
                    "retry-initial-negative",
                    "    retry_on_failure: {initial_interval: -1s}\n",
                    False,
                ),
                ("retry-initial-zero", "    retry_on_failure: {initial_interval: 0s}\n", True),
                (
                    "retry-randomization-over-1",
                    "    retry_on_failure: {randomization_factor: 1.5}\n",
                    False,
                ),
                (
                    "retry-randomization-1",
                    "    retry_on_failure: {randomization_factor: 1}\n",
                    True,
                ),
                (
                    "retry-randomization-negative",
                    "    retry_on_failure: {randomization_factor: -0.1}\n",
                    False,
                ),
                ("retry-multiplier-negative", "    retry_on_failure: {multiplier: -1}\n", False),
                (
                    "retry-max-interval-negative",
                    "    retry_on_failure: {max_interval: -1s}\n",
                    False,
                ),
                ("timeout-negative", "    timeout: -1s\n", False),
                ("timeout-zero", "    timeout: 0s\n", True),
                ("tls-ca-file-and-pem", "    tls: {ca_file: /tmp/ca.pem, ca_pem: x}\n", False),
                (
                    "tls-ca-file-and-empty-pem",
                    "    tls: {ca_file: /tmp/ca.pem, ca_pem: ''}\n",
                    True,
                ),
                ("tls-cert-without-key", "    tls: {cert_file: /tmp/c.pem}\n", False),
                ("tls-min-version-1.5", "    tls: {min_version: '1.5'}\n", False),
                ("tls-max-version-1.3", "    tls: {max_version: '1.3'}\n", True),
                ("tls-min-over-max", "    tls: {min_version: '1.3', max_version: '1.2'}\n", False),
                ("tls-max-below-default-min", "    tls: {max_version: '1.1'}\n", False),
                ("tls-min-at-max", "    tls: {min_version: '1.1', max_version: '1.1'}\n", True),
            )
        },
        "otlp-exporter-retry-disabled-initial-negative": (
            _otlp_exporter("    retry_on_failure: {enabled: false, initial_interval: -1s}\n"),
            {"current": False, "legacy": True},  # v1.67.0 checks the bounds even when disabled
        ),
        **{
            f"otlp-receiver-{name}": (_grpc_receiver(body), accepted)
            for name, body, accepted in (
                ("max-recv-negative", "        max_recv_msg_size_mib: -1\n", False),
                ("max-recv-zero", "        max_recv_msg_size_mib: 0\n", True),
                ("read-buffer-negative", "        read_buffer_size: -1\n", False),
                ("tls-ca-only", "        tls: {ca_file: /tmp/ca.pem}\n", False),
                ("tls-cert-and-key", "        tls: {cert_file: /tmp/c.pem, key_pem: x}\n", True),
            )
        },
        **{
            f"processor-{name}": (_processor(processor, body, signal), accepted)
            for name, processor, body, signal, accepted in (
                (
                    "sampler-attribute-source-bogus",
                    "probabilistic_sampler",
                    "    attribute_source: bogus\n",
                    "logs",
                    False,
                ),
                (
                    "sampler-attribute-source-record",
                    "probabilistic_sampler",
                    "    attribute_source: record\n    from_attribute: a\n",
                    "logs",
                    True,
                ),
                (
                    "sampler-mode-bogus",
                    "probabilistic_sampler",
                    "    mode: bogus\n",
                    "traces",
                    False,
                ),
                (
                    "sampler-mode-equalizing",
                    "probabilistic_sampler",
                    "    mode: equalizing\n",
                    "traces",
                    True,
                ),
                (
                    "d2c-max-stale-zero",
                    "deltatocumulative",
                    "    max_stale: 0s\n",
                    "metrics",
                    False,
                ),
                ("d2c-max-stale-1s", "deltatocumulative", "    max_stale: 1s\n", "metrics", True),
                (
                    "d2c-max-streams-negative",
                    "deltatocumulative",
                    "    max_streams: -1\n",
                    "metrics",
                    False,
                ),
                (
                    "d2c-max-streams-zero",
                    "deltatocumulative",
                    "    max_streams: 0\n",
                    "metrics",
                    True,
                ),
                (
                    "c2d-match-type-without-metrics",
                    "cumulativetodelta",
                    "    include: {match_type: strict}\n",
                    "metrics",
                    False,
                ),
                (
                    "c2d-match-type-with-metrics",
                    "cumulativetodelta",
                    "    include: {match_type: strict, metrics: [a]}\n",
                    "metrics",
                    True,
                ),
            )
        },
        **{
            f"extension-{name}": (_extension(extension, body), accepted)
            for name, extension, body, accepted in (
                (
                    "file-storage-max-transaction-negative",
                    "file_storage",
                    "    directory: /tmp\n    compaction: {max_transaction_size: -1}\n",
                    False,
                ),
                (
                    "file-storage-max-transaction-zero",
                    "file_storage",
                    "    directory: /tmp\n    compaction: {max_transaction_size: 0}\n",
                    True,
                ),
                (
                    "file-storage-permissions-not-octal",
                    "file_storage",
                    "    directory: /tmp\n    create_directory: true\n    directory_permissions: '999'\n",
                    False,
                ),
                (
                    "file-storage-permissions-over-0777",
                    "file_storage",
                    "    directory: /tmp\n    create_directory: true\n    directory_permissions: '1777'\n",
                    False,
                ),
                (
                    "file-storage-permissions-0700",
                    "file_storage",
                    "    directory: /tmp\n    create_directory: true\n    directory_permissions: '0700'\n",
                    True,
                ),
                (
                    "file-storage-permissions-unused",
                    "file_storage",
                    "    directory: /tmp\n    directory_permissions: '999'\n",
                    True,
                ),
                (
                    "file-storage-rebound-check-zero",
                    "file_storage",
                    "    directory: /tmp\n    compaction: {on_rebound: true, directory: /tmp, check_interval: 0s}\n",
                    False,
                ),
                (
                    "file-storage-rebound-check-1s",
                    "file_storage",
                    "    directory: /tmp\n    compaction: {on_rebound: true, directory: /tmp, check_interval: 1s}\n",
                    True,
                ),
                ("bearertoken-empty-token", "bearertokenauth", "    token: ''\n", False),
                (
                    "bearertoken-empty-token-and-filename",
                    "bearertokenauth",
                    "    token: ''\n    filename: /tmp/token\n",
                    True,
                ),
            )
        },
    }
)

# Rules that compare options or read an endpoint (_checks/component_rules.py): the memory
# limiter, the exporter's sending_queue.batch and retry_on_failure, the gRPC endpoint.
AGREEMENT_CASES.update(
    {
        **{
            f"memory-limiter-{name}": (
                _processor("memory_limiter", "    check_interval: 1s\n" + body),
                accepted,
            )
            for name, body, accepted in (
                ("spike-mib-at-limit", "    limit_mib: 100\n    spike_limit_mib: 100\n", False),
                ("spike-mib-below-limit", "    limit_mib: 100\n    spike_limit_mib: 99\n", True),
                (
                    "spike-pct-at-limit",
                    "    limit_percentage: 50\n    spike_limit_percentage: 50\n",
                    False,
                ),
                (
                    "spike-pct-below-limit",
                    "    limit_percentage: 50\n    spike_limit_percentage: 49\n",
                    True,
                ),
                (
                    "spike-mib-beside-pct",
                    "    limit_percentage: 50\n    spike_limit_mib: 100\n",
                    True,
                ),
                ("limit-mib-zero", "    limit_mib: 0\n", False),
                (
                    "hard-gc-over-soft-default",
                    "    limit_mib: 100\n    min_gc_interval_when_hard_limited: 20s\n",
                    False,
                ),
                (
                    "hard-gc-at-soft-default",
                    "    limit_mib: 100\n    min_gc_interval_when_hard_limited: 10s\n",
                    True,
                ),
            )
        },
        **{
            f"otlp-exporter-{name}": (_otlp_exporter(body), accepted)
            for name, body, accepted in (
                (
                    "queue-batch-max-below-min",
                    "    sending_queue: {batch: {min_size: 10, max_size: 5}}\n",
                    False,
                ),
                (
                    "queue-batch-max-zero",
                    "    sending_queue: {batch: {min_size: 10, max_size: 0}}\n",
                    True,
                ),
                (
                    "queue-batch-max-below-default-min",
                    "    sending_queue: {batch: {max_size: 100}}\n",
                    False,
                ),
                (
                    "queue-batch-max-at-default-min",
                    "    sending_queue: {batch: {max_size: 8192}}\n",
                    True,
                ),
                (
                    "retry-elapsed-below-initial",
                    "    retry_on_failure: {max_elapsed_time: 1s}\n",
                    False,
                ),
                (
                    "retry-elapsed-below-max-interval",
                    "    retry_on_failure: {max_elapsed_time: 29s}\n",
                    False,
                ),
                (
                    "retry-elapsed-at-max-interval",
                    "    retry_on_failure: {max_elapsed_time: 30s}\n",
                    True,
                ),
                ("retry-elapsed-zero", "    retry_on_failure: {max_elapsed_time: 0s}\n", True),
                ("balancer-round-robin", "    balancer_name: round_robin\n", True),
                ("balancer-bogus", "    balancer_name: bogus\n", False),
            )
        },
        "otlp-exporter-queue-disabled-batch-max-below-default-min": (
            _otlp_exporter("    sending_queue: {enabled: false, batch: {max_size: 100}}\n"),
            {"current": True, "legacy": False},  # v0.161.0 does not check a disabled queue
        ),
        "otlp-exporter-retry-disabled-elapsed-below-initial": (
            _otlp_exporter("    retry_on_failure: {enabled: false, max_elapsed_time: 1s}\n"),
            {"current": False, "legacy": True},  # configretry v1.47.0 checks enabled retries only
        ),
        "otlp-exporter-balancer-Pick_First": (
            _otlp_exporter("    balancer_name: Pick_First\n"),
            {"current": False, "legacy": True},  # grpc-go v1.77 lower-cases the name
        ),
        **{
            f"otlp-exporter-endpoint-{name}": (
                _otlp_exporter("").replace("endpoint: localhost:4317", f"endpoint: {endpoint}"),
                accepted,
            )
            for name, endpoint, accepted in (
                ("no-port", "localhost", False),
                ("ipv6-without-brackets", '"::1:4317"', False),
                ("ipv6", '"[::1]:4317"', True),
                ("http-no-port", "http://localhost", False),
                ("https", "https://localhost:4317", True),
                ("path-after-port", "http://localhost:4317/x", False),
                ("port-name", "localhost:otlp", False),
                ("empty-port", '"localhost:"', False),
                ("dns", "dns:///localhost:4317", True),
                ("dns-authority", "dns://8.8.8.8/localhost:4317", True),
                ("dns-no-port", "dns:///localhost", False),
                ("unix", "unix:///tmp/otlp.sock", True),
                ("unix-empty", '"unix://"', False),
            )
        },
        **{
            # configgrpc v1.67.0 reads any scheme:// URI; otlpexporter v0.141.0 only dns://.
            f"otlp-exporter-endpoint-{name}": (
                _otlp_exporter("").replace("endpoint: localhost:4317", f"endpoint: {endpoint}"),
                {"current": True, "legacy": False},
            )
            for name, endpoint in (
                ("passthrough", "passthrough:///localhost:4317"),
                ("dns-query", "dns:///localhost:4317?x=1"),
            )
        },
    }
)

# internal/coreinternal/attraction/attraction.go, NewAttrProc: the options each action takes.
AGREEMENT_CASES.update(
    {
        f"resource-action-{name}": (
            _processor("resource", f"    attributes:\n      - {{key: a, {action}}}\n"),
            accepted,
        )
        for name, action, accepted in (
            ("value-and-from-attribute", "value: b, from_attribute: c, action: upsert", False),
            (
                "value-and-empty-from-attribute",
                "value: b, from_attribute: '', action: upsert",
                True,
            ),
            (
                "from-attribute-and-from-context",
                "from_attribute: b, from_context: c, action: insert",
                False,
            ),
            ("upsert-with-pattern", "value: b, pattern: x, action: upsert", False),
            ("update-with-converted-type", "value: b, converted_type: int, action: update", False),
            ("delete-with-value", "value: b, action: delete", False),
            ("delete-with-from-attribute", "from_attribute: b, action: HASH", False),
            ("delete-with-from-context", "from_context: b, action: delete", True),
            ("hash-with-converted-type", "converted_type: int, action: hash", False),
            ("extract-with-value", "pattern: '(?P<x>.*)', value: b, action: extract", False),
            (
                "extract-with-converted-type",
                "pattern: '(?P<x>.*)', converted_type: int, action: extract",
                False,
            ),
            ("convert-with-pattern", "converted_type: int, pattern: x, action: convert", False),
            (
                "convert-with-from-attribute",
                "converted_type: int, from_attribute: b, action: convert",
                False,
            ),
        )
    }
)
AGREEMENT_CASES["resource-action-default-value-only"] = (
    _processor("resource", "    attributes:\n      - {key: a, default_value: b, action: upsert}\n"),
    {"current": True, "legacy": False},  # attraction v0.161.0 takes a default_value
)

# internal/filter/filterconfig/config.go, ValidateForSpans and ValidateForLogs: a match block
# of the attributes processor names something the pipeline's signal can match on.
AGREEMENT_CASES.update(
    {
        f"attributes-{name}": (
            _processor(
                "attributes", f"    {match}\n    actions: [{{key: a, action: delete}}]\n", signal
            ),
            accepted,
        )
        for name, match, signal, accepted in (
            ("traces-include-match-type-only", "include: {match_type: strict}", "traces", False),
            (
                "traces-include-empty-services",
                "include: {match_type: strict, services: []}",
                "traces",
                False,
            ),
            (
                "traces-include-services",
                "include: {match_type: strict, services: [a]}",
                "traces",
                True,
            ),
            (
                "traces-exclude-span-kinds",
                "exclude: {match_type: strict, span_kinds: [SPAN_KIND_SERVER]}",
                "traces",
                True,
            ),
            ("logs-exclude-match-type-only", "exclude: {match_type: strict}", "logs", False),
            ("logs-include-bodies", "include: {match_type: strict, log_bodies: [a]}", "logs", True),
            (
                "logs-include-severity-number",
                "include: {match_type: strict, log_severity_number: {min: 9}}",
                "logs",
                True,
            ),
            # filterset.CreateFilterSet, filtermatcher.NewAttributesMatcher: match_type.
            ("traces-services-no-match-type", "include: {services: [a]}", "traces", False),
            (
                "traces-services-Strict",
                "include: {match_type: Strict, services: [a]}",
                "traces",
                False,
            ),
            (
                "traces-kinds-regexp",
                "include: {match_type: regexp, span_kinds: [a]}",
                "traces",
                True,
            ),
            (
                "traces-libraries-bogus",
                "exclude: {match_type: bogus, libraries: [{name: a}]}",
                "traces",
                False,
            ),
            (
                "traces-attribute-key-only-bogus",
                "include: {match_type: bogus, attributes: [{key: a}]}",
                "traces",
                True,
            ),
            (
                "traces-attribute-value-bogus",
                "include: {match_type: bogus, attributes: [{key: a, value: b}]}",
                "traces",
                False,
            ),
            (
                "logs-resource-value-bogus",
                "exclude: {match_type: bogus, resources: [{key: a, value: b}]}",
                "logs",
                False,
            ),
            ("logs-bodies-bogus", "exclude: {match_type: bogus, log_bodies: [a]}", "logs", False),
            (
                "logs-severity-number-bogus",
                "exclude: {match_type: bogus, log_severity_number: {min: 9}}",
                "logs",
                True,
            ),
        )
    }
)


def _to_backend(client: str = "", http: str = "") -> str:
    """The probe's shape sending to a backend as the tenant rules want it: ``client`` are more
    options of the OTLP/HTTP exporter's HTTP client, ``http`` of the OTLP receiver's server."""
    server = f"      http:\n        endpoint: localhost:4318\n{http}" if http else ""
    return (
        'receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: "localhost:4317"\n'
        f"{server}processors:\n  resource/tenant:\n    attributes:\n"
        '      - {key: Authorization, value: "${env:OTEL_TOKEN}", action: upsert}\n'
        "exporters:\n  otlphttp:\n    endpoint: https://backend.invalid\n"
        '    headers:\n      Authorization: "Bearer ${env:OTEL_TOKEN}"\n'
        f"{client}service:\n  telemetry:\n    metrics:\n      level: none\n"
        "  pipelines:\n    traces: {receivers: [otlp], processors: [resource/tenant], "
        "exporters: [otlphttp]}\n"
    )


# Options the Go structs declare and upstream's schema files leave out (collector/schema/
# common.yaml): the HTTP client's and server's keep-alive options (deprecated at v0.160.0 for a
# keepalive section, which v0.141.0 lacks; both together are refused) and configtls's
# include_insecure_cipher_suites (v0.161.0 only). Accepted per line where the lines differ.
AGREEMENT_CASES.update(
    {
        "client-max-idle-conns": (_to_backend("    max_idle_conns: 10\n"), True),
        # Go's url.Parse reads the scheme in any case.
        "client-endpoint-scheme-upper-case": (
            _to_backend().replace("https://backend.invalid", "HTTPS://backend.invalid"),
            True,
        ),
        "client-max-idle-conns-per-host": (_to_backend("    max_idle_conns_per_host: 2\n"), True),
        "client-idle-conn-timeout": (_to_backend("    idle_conn_timeout: 5s\n"), True),
        "client-disable-keep-alives": (_to_backend("    disable_keep_alives: true\n"), True),
        "client-idle-conn-timeout-and-keepalive": (
            _to_backend("    idle_conn_timeout: 5s\n    keepalive: {max_idle_conns: 3}\n"),
            False,
        ),
        "client-zero-max-idle-conns-and-keepalive": (
            _to_backend("    max_idle_conns: 0\n    keepalive: {max_idle_conns: 3}\n"),
            {"current": True, "legacy": False},
        ),
        "server-idle-timeout": (_to_backend(http="        idle_timeout: 5s\n"), True),
        "server-keep-alives-disabled": (
            _to_backend(http="        keep_alives_enabled: false\n"),
            True,
        ),
        "server-keep-alives-disabled-and-keepalive": (
            _to_backend(http="        keep_alives_enabled: false\n        keepalive: {}\n"),
            False,
        ),
        # v0.161.0 renamed the gRPC exporter otlp to otlp_grpc, not the receiver otlp.
        "otlp-receiver-and-otlp-exporter": (
            _hand_written(exporters="  otlp:\n    endpoint: localhost:14317\n").replace(
                "exporters: [debug]", "exporters: [otlp]"
            ),
            True,
        ),
        # exporter/debugexporter/config.go: output_paths from v0.161.0 (the generator now stops
        # on a condition that names an option its definition lacks, as these two did).
        "debug-output-paths": (
            _hand_written(
                exporters="  debug/b:\n    use_internal_logger: false\n    output_paths: [stdout]\n"
            ).replace("exporters: [debug]", "exporters: [debug, debug/b]"),
            {"current": True, "legacy": False},
        ),
        # config/confighttp/server.go: the HTTP server listens on a Unix socket from v0.161.0.
        "server-unix-socket": (
            _to_backend(http="        transport: unix\n").replace(
                "endpoint: localhost:4318", "endpoint: ./http.sock"
            ),
            {"current": True, "legacy": False},
        ),
        "tls-include-insecure-cipher-suites": (
            _to_backend("    tls:\n      include_insecure_cipher_suites: true\n"),
            {"current": True, "legacy": False},
        ),
    }
)


def _ottl(processor: str, body: str, signal: str = "metrics") -> str:
    """The probe's shape with a transform or filter processor (``body``: its options) in a
    pipeline of ``signal``."""
    return (
        'receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: "localhost:4317"\n'
        f"processors:\n  {processor}:\n{body}exporters:\n  debug:\n"
        "service:\n  telemetry:\n    metrics:\n      level: none\n"
        f"  pipelines:\n    {signal}: {{receivers: [otlp], processors: [{processor}], "
        "exporters: [debug]}\n"
    )


_SET_A = '["set(resource.attributes[\\"a\\"], \\"b\\")"]'
# OTTL's error mode and the processors' context names are read in any case (ErrorMode and
# ContextID UnmarshalText); the transform processor's exemplar context came with v0.161.0, and
# instrumentation_scope names no context (an OTTL path, not a context).
AGREEMENT_CASES.update(
    {
        "transform-error-mode-and-context-upper-case": (
            _ottl(
                "transform",
                "    error_mode: IGNORE\n    metric_statements:\n"
                f"      - context: Resource\n        statements: {_SET_A}\n",
            ),
            True,
        ),
        "transform-context-instrumentation-scope": (
            _ottl(
                "transform",
                "    metric_statements:\n"
                f"      - context: instrumentation_scope\n        statements: {_SET_A}\n",
            ),
            False,
        ),
        "transform-metric-statements-in-span-context": (
            _ottl(
                "transform",
                f"    metric_statements:\n      - context: span\n        statements: {_SET_A}\n",
            ),
            False,
        ),
        "transform-exemplar-context": (
            _ottl(
                "transform",
                "    metric_statements:\n      - context: Exemplar\n"
                '        statements: ["set(exemplar.time_unix_nano, 1)"]\n',
            ),
            {"current": True, "legacy": False},
        ),
        "transform-exemplar-path-inferred": (
            _ottl(
                "transform",
                "    metric_statements:\n"
                '      - "set(exemplar.time_unix_nano, 1) where exemplar.time_unix_nano != 0"\n',
            ),
            {"current": True, "legacy": False},
        ),
        # transformprocessor config.go, Config.Validate: the job step turns on no such gate.
        "transform-flatten-data": (
            _ottl("transform", "    flatten_data: true\n", signal="logs"),
            False,
        ),
        "filter-error-mode-and-context-mixed-case": (
            _ottl(
                "filter",
                "    error_mode: Propagate\n    trace_conditions:\n      - context: Span\n"
                '        conditions: [\'attributes["x"] == "y"\']\n',
                signal="traces",
            ),
            {"current": True, "legacy": False},
        ),
    }
)


# Options of Prometheus's own structs (v0.314.0 at v0.161.0, v0.307.3 at v0.141.0) and of the
# receiver's API server that the v0.141.0 collector lacks.
AGREEMENT_CASES.update(
    {
        "prometheus-global-scrape-native-histograms": (
            _scrape(_job(), "      global:\n        scrape_native_histograms: true\n"),
            {"current": True, "legacy": False},
        ),
        "prometheus-job-extra-scrape-metrics": (
            _scrape(_job(extra="          extra_scrape_metrics: true\n")),
            {"current": True, "legacy": False},
        ),
        "prometheus-api-server-max-connections": (
            _scrape(_job()).replace(
                "  prometheus:\n",
                "  prometheus:\n    api_server:\n      enabled: true\n      max_connections: 8\n"
                "      server_config:\n        endpoint: localhost:19090\n",
                1,
            ),
            {"current": True, "legacy": False},
        ),
    }
)


def _extract(pattern: str, kind: str = "attributes") -> str:
    """A processor body with one extract action of ``pattern`` (YAML single-quoted)."""
    key = "actions" if kind == "attributes" else "attributes"
    return f"    {key}:\n      - {{key: url, action: extract, pattern: '{pattern}'}}\n"


def _match(lists: str, prefix: str = "") -> str:
    """An include block matching by regexp on ``lists`` (flow style), under ``prefix``."""
    indent = "      " if prefix else "    "
    head = f"    {prefix}:\n" if prefix else ""
    return f"{head}{indent}include:\n{indent}  match_type: regexp\n{indent}  {lists}\n"


_DELETE = "    actions: [{key: a, action: delete}]\n"


def _unused(text: str, name: str) -> str:
    """The config with processor ``name`` left out of its pipeline (never built)."""
    return text.replace(f"processors: [{name}], ", "")


def _statement(statement: str, context: str) -> str:
    """A transform processor with one statement of ``context`` (span or metric), in a
    pipeline of its signal."""
    quoted = statement.replace("\\", "\\\\").replace('"', '\\"')
    group, signal = ("trace", "traces") if context == "span" else ("metric", "metrics")
    return _ottl(
        "transform",
        f'    {group}_statements:\n      - context: {context}\n        statements: ["{quoted}"]\n',
        signal=signal,
    )


def _span_statement(statement: str) -> str:
    return _statement(statement, "span")


# Regular expressions the collector compiles with Go's regexp (RE2 syntax): when it reads the
# config (Prometheus relabel rules, OTTL literal patterns, used or not) or when a pipeline builds
# the processor (an unused processor's patterns are never compiled). Go takes \pL, \z, \Q...\E,
# possessive-free repeats up to 1000; it refuses lookarounds, backreferences and a** .
AGREEMENT_CASES.update(
    {
        "regexp-extract-unclosed": (_processor("attributes", _extract("(?P<a>x")), False),
        "regexp-extract-lookahead": (_processor("attributes", _extract("(?P<a>x)(?=y)")), False),
        "regexp-extract-go-only-syntax": (
            _processor("attributes", _extract(r"^(?P<a>\pL+)\Q.*\E(?U)(?P<b>x+)\z")),
            True,
        ),
        "regexp-extract-unnamed-unused": (
            _unused(_processor("attributes", _extract("(a)")), "attributes"),
            True,
        ),
        "regexp-extract-bad-unused": (
            _unused(_processor("attributes", _extract("(")), "attributes"),
            True,
        ),
        "regexp-resource-extract-unnamed": (
            _processor("resource", _extract("(a)(?P<b>c)", kind="resource")),
            False,
        ),
        "regexp-attributes-include-lookbehind": (
            _processor("attributes", _match("services: ['(?<!a)b']") + _DELETE),
            False,
        ),
        "regexp-attributes-include-attribute-value": (
            _processor("attributes", _match("attributes: [{key: k, value: '[z-a]'}]") + _DELETE),
            False,
        ),
        "regexp-attributes-include-quoted": (
            _processor("attributes", _match(r"services: ['\Qa.b(\E[[:word:]]{2,1000}']") + _DELETE),
            True,
        ),
        "regexp-filter-span-names-nested-repeat": (
            _processor("filter", _match("span_names: ['a**']", "spans")),
            False,
        ),
        "regexp-filter-metric-names-repeat-too-large": (
            _processor("filter", _match("metric_names: ['x{1001}']", "metrics"), "metrics"),
            False,
        ),
        "regexp-filter-log-bodies-backreference": (
            _processor("filter", _match(r"bodies: ['(a)\1']", "logs"), "logs"),
            False,
        ),
        "regexp-filter-spans-block-in-a-metrics-pipeline": (
            _processor("filter", _match("span_names: ['(']", "spans"), "metrics"),
            True,
        ),
        "regexp-redaction-blocked-value-lookahead": (
            _processor(
                "redaction", "    allow_all_keys: true\n    blocked_values: ['\\d{4}(?!x)']\n"
            ),
            False,
        ),
        "regexp-redaction-blocked-value": (
            _processor(
                "redaction", "    allow_all_keys: true\n    blocked_values: ['\\b\\d{16}\\b']\n"
            ),
            True,
        ),
        "regexp-prometheus-relabel-unclosed": (
            _scrape(
                _job(
                    extra="          relabel_configs: [{source_labels: [a], regex: '(', action: keep}]\n"
                )
            ),
            False,
        ),
        "regexp-prometheus-relabel-closes-the-anchor-group": (
            _scrape(
                _job(
                    extra="          metric_relabel_configs: [{source_labels: [a], regex: 'a)(b', action: keep}]\n"
                )
            ),
            True,
        ),
        "regexp-ottl-replace-pattern-go-syntax": (
            _span_statement(r'replace_pattern(name, "(?i)a\\pL\\z", "x")'),
            True,
        ),
        "regexp-ottl-is-match-lookahead": (
            _span_statement('set(name, "x") where IsMatch(name, "a(?=b)")'),
            False,
        ),
        "regexp-ottl-named-argument": (
            _span_statement(
                'replace_all_patterns(attributes, "value", regex_pattern="[z-a]", replacement="x")'
            ),
            False,
        ),
        "regexp-ottl-dynamic-pattern": (
            _span_statement('set(name, "x") where IsMatch(name, Concat(["(", ""], ""))'),
            True,
        ),
    }
)


# OTTL call arguments as pkg/ottl buildArgs judges them: counted against the arguments struct
# (Optional fields not required), named ones looked up as fields, none positional after a named
# one; a factory without a struct (Now) ignores what it is given. Enum symbols as the context's
# parseEnum takes them; an argument that names a function (SHA256) is no enum.
AGREEMENT_CASES.update(
    {
        "ottl-arguments-too-few": (_span_statement("set(name)"), False),
        "ottl-arguments-too-many": (_span_statement('set(name, "a", "b")'), False),
        "ottl-arguments-converter-too-few": (
            _span_statement('set(name, Concat([name, "x"]))'),
            False,
        ),
        "ottl-arguments-named": (
            _span_statement('replace_pattern(name, regex_pattern="a", replacement="b")'),
            True,
        ),
        "ottl-arguments-optional-named": (
            _span_statement('replace_pattern(name, "a", "b", function=SHA256)'),
            True,
        ),
        "ottl-arguments-unknown-name": (
            _span_statement('replace_pattern(name, "a", replace="b")'),
            False,
        ),
        "ottl-arguments-positional-after-named": (
            _span_statement('replace_pattern(name, regex_pattern="a", "b")'),
            False,
        ),
        "ottl-enum-misspelt": (
            _span_statement('set(name, "x") where kind == SPAN_KIND_SERVR'),
            False,
        ),
        "ottl-enum-of-the-context": (
            _span_statement(
                'set(attributes["s"], STATUS_CODE_ERROR) where kind == SPAN_KIND_SERVER'
            ),
            True,
        ),
        "ottl-enum-that-names-a-function": (
            _span_statement('replace_pattern(name, "a", "b", SHA256)'),
            True,
        ),
        "ottl-arguments-ignored-without-a-struct": (
            _span_statement('set(attributes["t"], Now(1))'),
            True,
        ),
    }
)


def _metric_statement(statement: str) -> str:
    return _statement(statement, "metric")


# OTTL argument values as pkg/ottl buildArg takes them for their field's type: a literal type
# its literal (an unsigned number without a point is an int, a signed one an expression), a
# Setter a path, a slice a list (of literals for []string), a FunctionGetter a function's name;
# a Getter anything.
AGREEMENT_CASES.update(
    {
        "ottl-argument-int": (_span_statement("truncate_all(attributes, 10)"), True),
        "ottl-argument-int-signed": (_span_statement("truncate_all(attributes, -1)"), False),
        "ottl-argument-int-given-a-float": (
            _span_statement("truncate_all(attributes, 1.5)"),
            False,
        ),
        "ottl-argument-int-given-a-path": (
            _span_statement("truncate_all(attributes, dropped_attributes_count)"),
            False,
        ),
        "ottl-argument-float": (_metric_statement('scale_metric(2.0, "ms")'), True),
        "ottl-argument-float-given-an-int": (_metric_statement('scale_metric(2, "ms")'), False),
        "ottl-argument-bool-given-a-string": (
            _metric_statement('extract_sum_metric("true")'),
            False,
        ),
        "ottl-argument-string-given-a-path": (
            _span_statement('set(attributes["c"], ConvertCase(name, name))'),
            False,
        ),
        "ottl-argument-setter-given-a-converter": (
            _span_statement('set(String(name), "x")'),
            False,
        ),
        "ottl-argument-setter-given-a-keyed-path": (
            _span_statement('set(attributes["a"]["b"], "x")'),
            True,
        ),
        "ottl-argument-string-list": (
            _span_statement('limit(attributes, 10, ["a", "b"])'),
            True,
        ),
        "ottl-argument-string-list-given-a-path": (
            _span_statement('limit(attributes, 10, ["a", name])'),
            False,
        ),
        "ottl-argument-list-given-a-string": (
            _span_statement('limit(attributes, 10, "a")'),
            False,
        ),
        "ottl-argument-getter-list-given-paths": (
            _span_statement('set(attributes["c"], Format("%s-%v", [name, attributes["a"]]))'),
            True,
        ),
        "ottl-argument-function-given-a-string": (
            _span_statement('replace_pattern(name, "a", "b", "SHA256")'),
            False,
        ),
        "ottl-argument-getter-given-anything": (
            _span_statement('set(attributes["c"], Concat([name, 1, true], "-"))'),
            True,
        ),
    }
)

# Nesting: Go's parser recurses on a stack that grows, so the collector reads a condition in a
# thousand parentheses; the package reads 32 levels and leaves deeper text to it (a warning).
AGREEMENT_CASES.update(
    {
        # Far past the bound, yet shallow enough for the collector: its parser's time grows with
        # the square of the depth (0.9 s at 200 levels, 28 s at 1,000 on an idle 2-core machine,
        # over the 60 s validate bound under a loaded CI). The package's side of deeper text is
        # test_ottl's.
        "ottl-nested-far-past-the-bound": (
            _span_statement('set(name, "x") where ' + "(" * 200 + "true" + ")" * 200),
            True,
        ),
        "ottl-nested-at-the-bound-with-an-unknown-path": (
            _span_statement('set(name, "x") where ' + "(" * 32 + "nmae == 1" + ")" * 32),
            False,
        ),
    }
)


@pytest.mark.parametrize("line", LINES)
def test_package_and_collector_agree_on_hand_written_configs(
    line: str, binaries: dict[str, Path], tmp_path: Path
) -> None:
    """Each case's verdict is the collector's on every line, and the package's is the same (on
    the line's platform build, whose components include the minimal build's)."""
    names = list(AGREEMENT_CASES)
    runs = [(binaries[PLATFORM[line]], AGREEMENT_CASES[name][0]) for name in names]
    wrong = []
    for name, result in zip(names, _validate_each(runs, tmp_path), strict=True):
        text, accepted = AGREEMENT_CASES[name]
        expected = accepted if isinstance(accepted, bool) else accepted[line]
        package_ok = _package_accepts(Case(name, line, text))
        collector_ok = result.returncode == 0
        if (collector_ok, package_ok) != (expected, expected):
            wrong.append(
                f"{name}: expected {expected}, collector {collector_ok}, package {package_ok}"
            )
    assert not wrong, "\n".join(wrong)
