"""SPEC section 4 holds in every line and combination, read back from the rendered YAML."""

from __future__ import annotations

import re

import pytest
import yaml
from support import helpers

from nemo_gym.orchestration.api import SubmitConfig

EXAMPLE = helpers.REPO / "examples" / "submit.yaml"
CONFIG = SubmitConfig.from_yaml(EXAMPLE)
CASES = list(helpers.render_variants(CONFIG))
IDS = [f"{line}-{combination}" for line, combination, _ in CASES]
SIGNALS = ("traces", "metrics", "logs")


def of_type(section: dict, type_name: str) -> dict:
    found = {k: v for k, v in section.items() if k.split("/")[0] == type_name}
    assert found, f"no {type_name} component in {sorted(section)}"
    return found


def _type_names(line: str) -> tuple[str, str]:
    names = helpers.line_metadata()[line]["names"]
    return names["otlp_http"], names["span_metrics"]


@pytest.mark.parametrize(("line", "combination", "text"), CASES, ids=IDS)
def test_rendered_config_meets_the_contract(line: str, combination: str, text: str) -> None:
    config = yaml.safe_load(text)
    otlp_http_type, span_metrics_type = _type_names(line)
    # Provenance header.
    head = text.splitlines()[:3]
    assert head[0].startswith("# OpenTelemetry Collector config rendered by nemo-gym-otel ")
    assert f"line {line}, combination {combination}, template version 9" in head[1]

    assert config["extensions"]["health_check"]["endpoint"] == "localhost:13133"
    queue_storage = ["file_storage/queue"] if "otlp_http" in combination else []
    assert config["service"]["extensions"] == ["health_check", *queue_storage]
    protocols = config["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"] == "localhost:4317"
    assert protocols["http"]["endpoint"] == "localhost:4318"

    scrape = config["receivers"]["prometheus"]["config"]["scrape_configs"]
    jobs = {job["job_name"]: job for job in scrape}
    assert list(jobs) == ["gym-vllm/policy", "gym-vllm/judge", "dcgm", "node"]
    # Targets come from files the job step writes at start (tests/test_scrape_targets.py).
    targets = f"{helpers.job_dir(CONFIG, 'aime25')}/otel/targets"
    assert {name: job["file_sd_configs"] for name, job in jobs.items()} == {
        "gym-vllm/policy": [{"files": [f"{targets}/model-policy.json"]}],
        "gym-vllm/judge": [{"files": [f"{targets}/model-judge.json"]}],
        "dcgm": [{"files": [f"{targets}/dcgm.json"]}],
        "node": [{"files": [f"{targets}/node.json"]}],
    }
    assert not any("static_configs" in job for job in scrape)
    assert {job["scrape_interval"] for job in scrape} == {"15s"}

    processors = config["processors"]
    keep = processors["transform/keep_service_name"]
    for key in ("trace_statements", "metric_statements", "log_statements"):
        (group,) = keep[key]
        assert group["context"] == "resource"
        (statement,) = group["statements"]
        assert statement.startswith(
            'set(attributes["service.name.override"], attributes["service.name"])'
        )
        assert 'where attributes["service.name.override"] == nil' in statement
    (rename,) = processors["transform/metric_names"]["metric_statements"]
    assert rename["context"] == "metric"
    assert re.fullmatch(
        r'replace_pattern\(name, "\^\(\[a-zA-Z_\]\[a-zA-Z0-9_\]\*\):", "\$\$\{1\}_"\)',
        rename["statements"][0],
    )

    attributes = processors["resource/job"]["attributes"]
    upserts = {a["key"]: a["value"] for a in attributes if a["action"] == "upsert"}
    assert upserts == {
        "service.name": "nemo-gym-eval",
        "user": "gym-user",
        "run_id": "gym-20261202-0001",
        "slurm_job_id": "${env:SLURM_JOB_ID}",
        "benchmark": "aime25",
        "cluster": "eos",
        "model": "qwen3-30b-a3b",
    }
    assert {"key": "slurm_job_id", "action": "convert", "converted_type": "string"} in attributes
    assert attributes.index(
        {"key": "slurm_job_id", "action": "convert", "converted_type": "string"}
    ) > [a["key"] for a in attributes].index("slurm_job_id")

    connectors = config["connectors"]
    span_metrics = connectors[span_metrics_type]
    assert span_metrics["histogram"]["explicit"]["buckets"] == [
        "250ms",
        "1s",
        "2s",
        "5s",
        "10s",
        "30s",
        "60s",
        "120s",
        "300s",
        "600s",
        "1800s",
    ]
    assert [d["name"] for d in span_metrics["dimensions"]] == [
        "service.name.override",
        "nemo.gym.sandbox.provider",
    ]
    # Decoupled from the scrape interval (15s here): two flushes fit in the final grace.
    assert span_metrics["metrics_flush_interval"] == "5s"

    exporters = config["exporters"]
    assert ("file" in combination) == any(k.startswith("file/") for k in exporters)
    hop = f"{otlp_http_type}/queue"
    backends = [k for k in exporters if helpers.exports_to_backend(k, line) and k != hop]
    assert backends == ([f"{otlp_http_type}/backend"] if "otlp_http" in combination else [])
    if "file" in combination:
        base = helpers.job_dir(CONFIG, "aime25")
        # The current line's collectors (v0.154.0 on) write standard zstd streams, appended to
        # by a requeued job; the legacy line's rotate, so the job step compresses each file
        # the rotation finished (the rotating writer appends to the live file by itself).
        kept: dict[str, object] = (
            {"compression": "zstd", "append": True}
            if line == "current"
            else {"rotation": {"max_megabytes": 100, "max_backups": 0}}
        )
        for signal in SIGNALS:
            assert exporters[f"file/{signal}"] == {
                "path": f"{base}/otel/{signal}{helpers.FILE_SUFFIXES[line]}",
                "format": "json",
                **kept,
            }
    if "otlp_http" in combination:
        backend = exporters[f"{otlp_http_type}/backend"]
        assert backend["endpoint"] == "https://otlp.observability.example.internal"
        assert backend["headers"] == {"Authorization": "Bearer ${env:OTEL_TOKEN}"}
        # It retries while the hop's request lasts, and waits out a backend's Retry-After
        # (which the hop could not hand back to the queue); no time limit of its own: the hop's
        # timeout bounds it.
        assert backend["retry_on_failure"] == {
            "enabled": True,
            "initial_interval": "1s",
            "max_interval": "30s",
            "max_elapsed_time": "0s",
        }
        assert backend["sending_queue"] == {"enabled": False}
        _check_disk_queue(config, hop, helpers.job_dir(CONFIG, "aime25"))

    pipelines = config["service"]["pipelines"]
    if "otlp_http" in combination:
        for signal in SIGNALS:
            assert pipelines[f"{signal}/queue"] == {
                "receivers": [f"forward/{signal}"],
                "exporters": [hop],
            }
            assert pipelines[f"{signal}/backend"]["receivers"] == ["otlp/queue"]
            assert pipelines[f"{signal}/backend"]["processors"] == ["resource/tenant"]
    ingest = {signal: pipelines[f"{signal}/ingest"] for signal in SIGNALS}
    assert ingest["metrics"]["receivers"] == ["otlp", "prometheus", span_metrics_type]
    assert ingest["traces"]["receivers"] == ["otlp"] and ingest["logs"]["receivers"] == ["otlp"]
    assert span_metrics_type in ingest["traces"]["exporters"]
    for signal, pipeline in ingest.items():
        order = pipeline["processors"]
        assert order.index("transform/keep_service_name") < order.index("resource/job")
        if signal == "metrics":
            assert order.index("transform/metric_names") < order.index("resource/job")
            assert order.index("transform/host_name") < order.index("resource/job")
        else:
            assert "transform/host_name" not in order
    (host,) = config["processors"]["transform/host_name"]["metric_statements"]
    assert host["context"] == "resource"
    assert host["statements"] == [
        'set(attributes["host.name"], attributes["server.address"]) '
        'where attributes["host.name"] == nil and attributes["server.address"] != nil'
    ]
    # info: the clean stop and each exporter's losses are logged there; debug would log every
    # export, and every OTTL statement with the whole resource (issue 19).
    assert config["service"]["telemetry"]["logs"]["level"] == "info"
    # No listener for the collector's own metrics (localhost:8888 by default).
    assert config["service"]["telemetry"]["metrics"] == {"level": "none"}
    # Only the renderer's own placeholders are expansions.
    assert set(re.findall(r"(?<!\$)\$\{[^}]*\}", text)) <= {
        "${env:SLURM_JOB_ID}",
        "${env:OTEL_TOKEN}",
        "${1}",
    }


def test_no_prometheus_receiver_without_targets() -> None:
    config = SubmitConfig.from_yaml(helpers.REPO / "tests" / "data" / "configs" / "minimal.yaml")
    for _, _, text in helpers.render_variants(config):
        parsed = yaml.safe_load(text)
        assert "prometheus" not in parsed["receivers"]
        assert "prometheus" not in parsed["service"]["pipelines"]["metrics/ingest"]["receivers"]
        keys = {a["key"] for a in parsed["processors"]["resource/job"]["attributes"]}
        assert "model" not in keys  # no policy model, no model attribute


def test_listen_host_and_fast_scrape() -> None:
    config = SubmitConfig.from_yaml(
        helpers.REPO / "tests" / "data" / "configs" / "disaggregated.yaml"
    )
    for _, _, text in helpers.render_variants(config):
        parsed = yaml.safe_load(text)
        assert parsed["extensions"]["health_check"]["endpoint"] == "[::1]:13133"
        assert parsed["receivers"]["otlp"]["protocols"]["http"]["endpoint"] == "[::1]:4318"
        (job, dcgm, node) = parsed["receivers"]["prometheus"]["config"]["scrape_configs"]
        assert [j["job_name"] for j in (job, dcgm, node)] == ["gym-vllm-pd/policy", "dcgm", "node"]
        assert job["file_sd_configs"][0]["files"][0].endswith("/otel/targets/model-policy.json")
        assert (job["scrape_interval"], job["scrape_timeout"]) == ("5s", "5s")


@pytest.mark.parametrize(
    ("listen_host", "pushed_to"),
    [
        ("localhost", "http://localhost:4318/v1/metrics"),
        ("::1", "http://[::1]:4318/v1/metrics"),
        ("10.1.2.3", "http://10.1.2.3:4318/v1/metrics"),
        ("0.0.0.0", "http://127.0.0.1:4318/v1/metrics"),  # a wildcard binds loopback too
        ("::", "http://[::1]:4318/v1/metrics"),
    ],
)
def test_delivery_report_pushes_to_the_own_receiver(listen_host: str, pushed_to: str) -> None:
    """The collector's own counters go to its own OTLP/HTTP receiver, without the token."""
    data = helpers.load_mapping(helpers.CONFIGS / "long-job.yaml")
    data["otel"]["listen_host"] = listen_host
    for _, _, text in helpers.render_variants(SubmitConfig.from_dict(data)):
        parsed = yaml.safe_load(text)
        (reader,) = parsed["service"]["telemetry"]["metrics"]["readers"]
        exporter = reader["periodic"]["exporter"]["otlp"]
        assert exporter == {"protocol": "http/protobuf", "endpoint": pushed_to}
        assert "OTEL_TOKEN" not in str(parsed["service"]["telemetry"])


def _duration(text: str) -> float:
    return float(text.removesuffix("s"))


def _check_disk_queue(config: dict, hop: str, job_dir: str) -> None:
    """The default backend path: a disk queue in the job directory, a loopback hop, pacing."""
    storage = config["extensions"]["file_storage/queue"]
    assert storage["directory"] == f"{job_dir}/otel/queue"
    # Compacted once emptied, not at start (a requeue's full queue would be copied first), and
    # a compaction's temporary file that a SIGKILL left is removed at start.
    assert storage["compaction"] == {
        "directory": storage["directory"],
        "on_rebound": True,
        "cleanup_on_start": True,
    }
    assert config["receivers"]["otlp/queue"] == {
        "protocols": {"http": {"endpoint": "localhost:4319"}}
    }
    exporter = config["exporters"][hop]
    assert exporter["endpoint"] == "http://localhost:4319"
    queue = exporter["sending_queue"]
    assert queue["storage"] == "file_storage/queue"
    assert queue["sizer"] == "bytes" and queue["queue_size"] == 4096 * 1024 * 1024
    assert queue["block_on_overflow"] is False  # a full queue refuses; the files still get it
    assert exporter["retry_on_failure"]["max_elapsed_time"] == "0s"  # until the backend takes it
    # The hop never gives up on a request the backend is still working on.
    backend = config["exporters"][hop.replace("/queue", "/backend")]
    assert _duration(exporter["timeout"]) > _duration(backend["timeout"])


def test_the_in_memory_queue_keeps_its_shutdown_bound() -> None:
    """``otel.backend_queue_megabytes: null``: the queue in memory, sized so the stop is bounded:
    no more requests queued than consumers (items in batches of at least min_size, one partial
    batch), each request waits one timeout."""
    mapping = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    mapping["otel"]["backend_queue_megabytes"] = None
    for line, combination, text in helpers.render_variants(SubmitConfig.from_dict(mapping)):
        config = yaml.safe_load(text)
        if "otlp_http" not in combination:
            continue
        otlp_http_type, _ = _type_names(line)
        assert f"{otlp_http_type}/queue" not in config["exporters"]
        assert "otlp/queue" not in config["receivers"]
        assert config["service"]["extensions"] == ["health_check"]
        backend = config["exporters"][f"{otlp_http_type}/backend"]
        assert backend["timeout"] == "3s"
        queue = backend["sending_queue"]
        assert queue["sizer"] == "items" and queue["block_on_overflow"] is False
        batch = queue["batch"]
        assert batch["min_size"] <= batch["max_size"]
        requests = -(-queue["queue_size"] // batch["min_size"]) + 1
        assert requests <= queue["num_consumers"], requests
        assert backend["retry_on_failure"]["enabled"] is True
        assert config["service"]["pipelines"]["traces/backend"]["receivers"] == ["forward/traces"]
