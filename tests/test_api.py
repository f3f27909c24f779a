"""SPEC section 2: every public constant and function, including its error messages."""

from __future__ import annotations

import ast
import copy
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nemo_gym.orchestration import api
from nemo_gym.orchestration.executors import otel
from nemo_gym.orchestration.executors.otel import (
    OtelConfigError,
    SubmitConfig,
    SubmitConfigError,
)


def test_constants_have_the_spec_values() -> None:
    assert (otel.COLLECTOR_SERVICE_NAME, otel.COLLECTOR_DIR, otel.COLLECTOR_CONFIG_NAME) == (
        "otel_collector",
        "otel",
        "collector.yaml",
    )
    assert (otel.COLLECTOR_HEALTH_PORT, otel.OTLP_GRPC_PORT, otel.OTLP_HTTP_PORT) == (
        13133,
        4317,
        4318,
    )
    assert otel.GYM_TELEMETRY_EXTRA == "telemetry"
    assert (otel.FINAL_SCRAPE_GRACE_SECONDS, otel.SHUTDOWN_WAIT_SECONDS) == (20, 30)


def test_public_names_are_exported() -> None:
    for name in otel.__all__:
        assert hasattr(otel, name), name
    assert api.SubmitConfig is otel.SubmitConfig
    assert "write_collector_config" in otel.__all__ and "validate_collector_config" in otel.__all__


def test_namespace_packages_have_no_init() -> None:
    import nemo_gym
    import nemo_gym.orchestration
    import nemo_gym.orchestration.executors

    for package in (nemo_gym, nemo_gym.orchestration, nemo_gym.orchestration.executors):
        assert package.__file__ is None, f"{package.__name__} must be a namespace package"
    assert (Path(otel.__file__).parent / "py.typed").is_file()


def test_errors_are_value_errors_with_paths() -> None:
    assert issubclass(OtelConfigError, ValueError)
    for cls in (otel.SubmitConfigError, otel.TemplateError, otel.CollectorConfigError):
        assert issubclass(cls, OtelConfigError)


def test_collector_config_path() -> None:
    assert otel.collector_config_path("/runs/g1/aime25") == Path(
        "/runs/g1/aime25/otel/collector.yaml"
    )


def test_scrape_targets_are_model_services_in_order(example_mapping: dict) -> None:
    example_mapping["services"] = {
        "zeta": {"type": "vllm", "model": "m", "port": 8300},
        "sandbox": {"type": "ray"},
        "alpha": {"type": "vllm_pd", "model": "m2"},
    }
    config = SubmitConfig.from_dict(
        example_mapping | {"driver": example_mapping["driver"] | {"policy_model": "zeta"}}
    )
    assert list(otel.scrape_targets(config).items()) == [("zeta", 8300), ("alpha", 8000)]


def test_otel_active_and_gym_telemetry_active(example_mapping: dict) -> None:
    on = SubmitConfig.from_dict(example_mapping)
    assert otel.otel_active(on) and otel.gym_telemetry_active(on)
    example_mapping["services"] = {}
    example_mapping["driver"].pop("policy_model")
    no_models = SubmitConfig.from_dict(example_mapping)
    assert otel.otel_active(no_models), "enabled is enough, even with nothing to scrape"
    example_mapping["otel"]["gym_telemetry"] = False
    assert not otel.gym_telemetry_active(SubmitConfig.from_dict(example_mapping))
    example_mapping["otel"].update(enabled=False, gym_telemetry=True)
    off = SubmitConfig.from_dict(example_mapping)
    assert not otel.otel_active(off) and not otel.gym_telemetry_active(off)


def test_validate_gym_telemetry_names_both_fixes(example_mapping: dict) -> None:
    otel.validate_gym_telemetry(SubmitConfig.from_dict(example_mapping))
    example_mapping["driver"]["gym_install"] = None
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(SubmitConfigError) as caught:
        otel.validate_gym_telemetry(config)
    assert caught.value.path == "driver.gym_install"
    assert "driver.gym_install (repo, ref)" in str(caught.value)
    assert "otel.gym_telemetry: false" in str(caught.value)
    example_mapping["otel"]["gym_telemetry"] = False
    otel.validate_gym_telemetry(SubmitConfig.from_dict(example_mapping))


@pytest.mark.parametrize(
    ("drop", "named"),
    [
        (["endpoint"], ["otel.endpoint"]),
        (["service_name"], ["otel.service_name"]),
        (["endpoint", "service_name"], ["otel.endpoint", "otel.service_name"]),
    ],
)
def test_validate_destination_names_every_missing_key(
    example_mapping: dict, drop: list[str], named: list[str]
) -> None:
    for key in drop:
        example_mapping["otel"].pop(key)
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(SubmitConfigError) as caught:
        otel.validate_destination(config)
    for key in named:
        assert key in str(caught.value)
    assert "otel.enabled: false" in str(caught.value)
    file_only = copy.deepcopy(example_mapping)
    file_only["otel"]["exporters"] = ["file"]
    otel.validate_destination(SubmitConfig.from_dict(file_only))  # files need no endpoint
    example_mapping["otel"]["enabled"] = False
    otel.validate_destination(SubmitConfig.from_dict(example_mapping))


def test_resolve_token(example_mapping: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    example_mapping["otel"]["token_env"] = "GYM_INGEST_TOKEN"
    config = SubmitConfig.from_dict(example_mapping)
    monkeypatch.setenv("GYM_INGEST_TOKEN", "s3cr3t-value")
    assert otel.resolve_token(config) == "s3cr3t-value"
    for value in (None, ""):
        if value is None:
            monkeypatch.delenv("GYM_INGEST_TOKEN")
        else:
            monkeypatch.setenv("GYM_INGEST_TOKEN", value)
        with pytest.raises(SubmitConfigError) as caught:
            otel.resolve_token(config)
        assert "GYM_INGEST_TOKEN" in str(caught.value) and "otel.enabled: false" in str(
            caught.value
        )


def test_driver_telemetry_env() -> None:
    assert otel.driver_telemetry_env("gym-42", "default,verify") == {
        "NEMO_GYM_OTEL_ENABLED": "1",
        "NEMO_GYM_OTEL_RUN_ID": "gym-42",
        "NEMO_GYM_OTEL_SPAN_GROUPS": "default,verify",
        "NEMO_GYM_OTEL_LOGS_ENABLED": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://localhost:4317",
    }
    assert (
        otel.driver_telemetry_env("g", "default", logs=False)["NEMO_GYM_OTEL_LOGS_ENABLED"] == "0"
    )


def test_merged_driver_env_lets_driver_env_win(
    example_mapping: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WANDB_API_KEY", "wandb-from-host")
    example_mapping["driver"]["env"] = {
        "NEMO_GYM_OTEL_SPAN_GROUPS": "lit:default",
        "WANDB_API_KEY": "host:WANDB_API_KEY",
        "SCRATCH": "runtime:SLURM_TMPDIR",
    }
    example_mapping["otel"]["gym_logs"] = False
    env = otel.merged_driver_env(SubmitConfig.from_dict(example_mapping), "gym-7")
    assert env["NEMO_GYM_OTEL_SPAN_GROUPS"] == "default"
    assert env["NEMO_GYM_OTEL_RUN_ID"] == "gym-7"
    assert env["NEMO_GYM_OTEL_LOGS_ENABLED"] == "0"
    assert env["WANDB_API_KEY"] == "wandb-from-host"
    assert env["SCRATCH"] == "${SLURM_TMPDIR}"
    monkeypatch.delenv("WANDB_API_KEY")
    with pytest.raises(SubmitConfigError) as caught:
        otel.merged_driver_env(SubmitConfig.from_dict(example_mapping), "gym-7")
    assert caught.value.path == "driver.env.WANDB_API_KEY"


@pytest.mark.parametrize(
    ("listen_host", "http", "grpc"),
    [
        ("localhost", "http://localhost:4318", "http://localhost:4317"),
        ("0.0.0.0", "http://localhost:4318", "http://localhost:4317"),
        ("10.31.4.7", "http://10.31.4.7:4318", "http://10.31.4.7:4317"),
        ("fd00::7", "http://[fd00::7]:4318", "http://[fd00::7]:4317"),
    ],
)
def test_merged_driver_env_points_at_the_listen_host(
    example_mapping: dict, listen_host: str, http: str, grpc: str
) -> None:
    """A collector bound to the node's address does not answer on localhost."""
    example_mapping["otel"]["listen_host"] = listen_host
    config = SubmitConfig.from_dict(example_mapping)
    env = otel.merged_driver_env(config, "gym-7", environ={"WANDB_API_KEY": "w"})
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == http
    assert env["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"] == grpc


def test_policy_model_name(example_mapping: dict) -> None:
    assert otel._policy_model_name(SubmitConfig.from_dict(example_mapping)) == "qwen3-30b-a3b"
    del example_mapping["services"]["policy"]["served_model_name"]
    assert (
        otel._policy_model_name(SubmitConfig.from_dict(example_mapping))
        == "Qwen/Qwen3-30B-A3B-Instruct-2507"
    )
    example_mapping["driver"]["policy_model"] = "sandbox"
    assert otel._policy_model_name(SubmitConfig.from_dict(example_mapping)) is None
    del example_mapping["driver"]["policy_model"]
    assert otel._policy_model_name(SubmitConfig.from_dict(example_mapping)) is None


def test_render_checks_its_own_arguments(example_mapping: dict) -> None:
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(SubmitConfigError, match=r"not one of driver\.benchmarks") as caught:
        otel.render_collector_config(config, "gsm8k", "/runs/g1/gsm8k")
    assert caught.value.path == "benchmark_name"
    with pytest.raises(SubmitConfigError, match="absolute") as caught:
        otel.render_collector_config(config, "aime25", "runs/g1/aime25")
    assert caught.value.path == "remote_bench_dir"


@pytest.mark.parametrize(
    ("endpoint", "refused"),
    [
        ("HTTPS://otlp.example.com", None),
        ("Https://otlp.example.com:4318", None),
        ("HTTP://otlp.example.com", "plain http://"),  # still cleartext, in any case
        ("ftp://otlp.example.com", "http:// or https:// URL"),
    ],
)
def test_the_endpoints_scheme_is_read_in_any_case_as_the_collector_does(
    example_mapping: dict, endpoint: str, refused: str | None
) -> None:
    example_mapping["otel"]["endpoint"] = endpoint
    if refused is None:
        rendered = otel.render_collector_config(
            SubmitConfig.from_dict(example_mapping), "aime25", "/runs/g1/aime25"
        )
        assert f'endpoint: "{endpoint}"' in rendered
        return
    with pytest.raises(SubmitConfigError, match=refused) as caught:
        SubmitConfig.from_dict(example_mapping)
    assert caught.value.path == "otel.endpoint"


def test_the_interval_bound_is_enforced_at_construction(
    example_mapping: dict, tmp_path: Path
) -> None:
    """A SubmitConfig that exists obeys every rule that needs only the config."""
    example_mapping["otel"]["scrape_interval_seconds"] = 21
    path = tmp_path / "submit.yaml"
    path.write_text(yaml.safe_dump(example_mapping), encoding="utf-8")
    with pytest.raises(SubmitConfigError, match=r"at most 20") as caught:
        SubmitConfig.from_yaml(path)
    assert caught.value.path == "otel.scrape_interval_seconds"
    example_mapping["otel"]["scrape_interval_seconds"] = 20
    assert "20s" in otel.render_collector_config(
        SubmitConfig.from_dict(example_mapping), "aime25", "/runs/g1/aime25"
    )
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(SubmitConfigError, match=r"at most 20"):
        dataclasses.replace(
            config, otel=dataclasses.replace(config.otel, scrape_interval_seconds=21)
        )


def test_errors_carry_their_violations_as_data(example_mapping: dict) -> None:
    example_mapping["otel"]["endpont"] = "x"
    example_mapping["otel"]["scrape_interval_seconds"] = "15s"
    with pytest.raises(SubmitConfigError) as caught:
        SubmitConfig.from_dict(example_mapping)
    assert [v.path for v in caught.value.violations] == [
        "otel.endpont",
        "otel.scrape_interval_seconds",
    ]
    assert (caught.value.path, caught.value.message) == (
        caught.value.violations[0].path,
        caught.value.violations[0].message,
    )
    single = SubmitConfigError("otel.endpoint", "is wrong")
    assert single.violations == (otel.Violation("otel.endpoint", "is wrong"),)
    assert str(single) == "otel.endpoint: is wrong"


def test_type_checkers_see_exactly_the_public_table() -> None:
    """The names imported for type checkers are the table's, so the two cannot drift apart."""
    tree = ast.parse(Path(otel.__file__).read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If))
    imported = {
        alias.asname or alias.name
        for node in guarded.body
        if isinstance(node, ast.ImportFrom) and node.module != "typing"
        for alias in node.names
    }
    assert imported == set(otel._LAZY)


def test_submit_config_is_frozen_and_filled_with_defaults(example_mapping: dict) -> None:
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(AttributeError):
        config.otel.enabled = False  # type: ignore[misc]
    assert config.otel.exporters == ("otlp_http", "file")
    assert config.otel.listen_host == "localhost" and config.otel.collector_version is None
    assert config.otel.gpu_metrics_port == 9400 and config.otel.node_metrics_port == 9100
    assert config.services["sandbox"].port == 6379 and not config.services["sandbox"].serves_model
    assert config.cluster == "eos"


def test_misspelt_key_gets_the_closest_known_key(example_mapping: dict) -> None:
    example_mapping["otel"]["scrape_intervall_seconds"] = 10
    with pytest.raises(SubmitConfigError) as caught:
        SubmitConfig.from_dict(example_mapping)
    assert caught.value.path == "otel.scrape_intervall_seconds"
    assert "did you mean 'scrape_interval_seconds'" in str(caught.value)


def test_messages_never_echo_string_values(example_mapping: dict) -> None:
    example_mapping["driver"]["env"]["SECRET"] = "plain-secret-value"
    with pytest.raises(SubmitConfigError) as caught:
        SubmitConfig.from_dict(example_mapping)
    assert caught.value.path == "driver.env.SECRET"
    assert "plain-secret-value" not in str(caught.value)


def test_import_is_cheap() -> None:
    """jinja2, jsonschema and yaml load on first use, not on import (the executor imports us always)."""
    code = (
        "import sys; import nemo_gym.orchestration.executors.otel; import nemo_gym.orchestration.api; "
        "print(sorted(m for m in ('jinja2', 'jsonschema', 'jsonschema_rs', 'yaml', 'referencing') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
