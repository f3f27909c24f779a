"""The ingest token reaches the backend unchanged, or the submission stops before it starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import helpers

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import (
    SubmitConfigError,
    TemplateError,
    render_collector_config,
    resolve_token,
)


@pytest.mark.parametrize(
    "token",
    [
        "c2VjcmV0LXRva2Vu",  # base64
        "dG9rZW4_with-url_safe=",  # base64url with padding
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJneW0ifQ.c2ln",  # a JWT
        "0f3a9c",  # hex that starts with a digit
        "123456789012345678",  # digits only: an integer that converts back exactly
        "tenant:abc123",  # a colon inside is still text
    ],
)
def test_tokens_that_survive_the_collectors_yaml_reading(example_mapping: dict, token: str) -> None:
    config = SubmitConfig.from_dict(example_mapping)
    assert resolve_token(config, {"OTEL_TOKEN": token}) == token


@pytest.mark.parametrize(
    "token",
    [
        "007123",  # leading zeros are lost as an integer
        "+42",  # the sign is lost
        "99999999999999999999",  # beyond 64 bits: becomes a float
        "1e10",  # a float
        "0x1F",  # hex number
        "true",
        "null",
        "~",
        ".inf",
        "token:",  # a trailing colon opens a mapping
        "--- abc",  # a space is outside the alphabet, and --- starts a document
        "with space",
        "quote'd",
    ],
)
def test_tokens_the_collector_would_change_are_refused_without_echoing_them(
    example_mapping: dict, token: str
) -> None:
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(SubmitConfigError) as caught:
        resolve_token(config, {"OTEL_TOKEN": token})
    assert caught.value.path == "otel.token_env"
    assert "OTEL_TOKEN" in str(caught.value)
    # One message for every refused token, so it cannot carry the token itself.
    with pytest.raises(SubmitConfigError) as reference:
        resolve_token(config, {"OTEL_TOKEN": "0000-not-echoed-0000 "})
    assert str(caught.value) == str(reference.value)


TOKEN = "tok-4f9c2e7a1b"  # long enough to be looked for
BENCH_DIR = "/lustre/fsw/nemo_gym_eval/runs/gym-1/aime25"  # under the example's output_path


@pytest.mark.parametrize(
    ("section", "key", "value", "path"),
    [
        ("otel", "service_name", f"eval-{TOKEN}", "otel.service_name"),
        ("otel", "endpoint", f"https://otlp.example.com/?t={TOKEN}", "otel.endpoint"),
        ("compute", "account", TOKEN, "compute.eos.account"),
        ("services", "model", f"org/{TOKEN}", "services.policy.model"),
    ],
)
def test_the_token_typed_into_the_config_is_refused_by_its_key(
    example_mapping: dict,
    monkeypatch: pytest.MonkeyPatch,
    section: str,
    key: str,
    value: str,
    path: str,
) -> None:
    monkeypatch.setenv("OTEL_TOKEN", TOKEN)
    target = example_mapping[section]
    target = next(iter(target.values())) if section == "compute" else target
    target = target["policy"] if section == "services" else target
    target[key] = value
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(SubmitConfigError) as caught:
        render_collector_config(config, "aime25", BENCH_DIR)
    assert caught.value.path == path
    assert "holds the ingest token" in str(caught.value) and TOKEN not in str(caught.value)


def test_the_token_in_the_job_directory_is_refused(
    example_mapping: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TOKEN", TOKEN)
    with pytest.raises(SubmitConfigError) as caught:
        render_collector_config(
            SubmitConfig.from_dict(example_mapping),
            "aime25",
            f"/lustre/fsw/nemo_gym_eval/runs/{TOKEN}/aime25",
        )
    assert caught.value.path == "remote_bench_dir"


def test_a_short_token_is_not_looked_for(
    example_mapping: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seven characters: found inside ordinary words, so not looked for (TOKEN_SEARCHED_FROM)."""
    monkeypatch.setenv("OTEL_TOKEN", "nemo-gy")
    text = render_collector_config(SubmitConfig.from_dict(example_mapping), "aime25", BENCH_DIR)
    assert "nemo-gy" in text  # the example's service name holds it


def test_an_override_writing_the_token_out_is_refused(
    example_mapping: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    builtin = (helpers.REPO / "templates" / "current" / "otlp_http+file.yaml.j2").read_text(
        encoding="utf-8"
    )
    folder = tmp_path / "current"
    folder.mkdir()
    (folder / "otlp_http+file.yaml.j2").write_text(
        builtin.replace("{% extends", f"# {TOKEN}\n{{% extends"), encoding="utf-8"
    )
    monkeypatch.setenv("OTEL_TOKEN", TOKEN)
    with pytest.raises(TemplateError) as caught:
        render_collector_config(
            SubmitConfig.from_dict(example_mapping), "aime25", BENCH_DIR, template_dirs=[tmp_path]
        )
    assert caught.value.path == "current/otlp_http+file.yaml.j2"
    assert "${env:OTEL_TOKEN}" in str(caught.value) and TOKEN not in str(caught.value)
