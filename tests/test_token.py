"""The ingest token reaches the backend unchanged, or the submission stops before it starts."""

from __future__ import annotations

import pytest

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import SubmitConfigError, resolve_token


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
