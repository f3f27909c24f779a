"""The ingest token: read from the submitting environment, refused if YAML would change it.

The executor forwards it into the job's environment; it is never written anywhere.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator, Mapping

from .._common.errors import SubmitConfigError, TemplateError, dotted
from .config import SubmitConfig

# The collector reads a value that is exactly ${env:NAME} as YAML, and the Authorization resource
# attribute takes whatever type that gives (then converted to a string). A token survives that
# unchanged when it is text YAML keeps as a string, or a plain integer that converts back to the
# same digits. Anything else (leading zeros, floats, hex, true/null, a YAML marker) would arrive
# changed and the routing proxy would drop every payload without a word.
_TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9._~+/=:-]+")
_TOKEN_AS_INTEGER = re.compile(r"-?[1-9][0-9]*|0")
_TOKEN_CHANGED_BY_YAML = re.compile(
    r"[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?"  # numbers, "+5", "007"
    r"|[-+]?0[xXoObB][0-9a-fA-F_]+"  # hex, octal, binary
    r"|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"
    r"|~|null|Null|NULL|true|True|TRUE|false|False|FALSE|y|Y|n|N|yes|Yes|YES|no|No|NO"
    r"|on|On|ON|off|Off|OFF"
    r"|(---|\.\.\.).*|.*:"
)
_INT64_MAX = 2**63 - 1
# Shorter tokens are not issued by any backend and would be found inside ordinary words.
TOKEN_SEARCHED_FROM = 8


def resolve_token(config: SubmitConfig, environ: Mapping[str, str] | None = None) -> str:
    """The ingest token from the submitting environment; the executor forwards it to the job.

    It is never written to the job directory: the rendered config refers to it as
    ``${env:<token_env>}``, which the collector resolves at start-up.
    """
    name = config.otel.token_env
    token = (os.environ if environ is None else environ).get(name, "")
    if not token:
        raise SubmitConfigError(
            "otel.token_env",
            f"the environment variable {name} is unset or empty, so the backend would drop every "
            f"payload; export {name}=<ingest token> before submitting, or set otel.enabled: false",
        )
    if not _token_survives_expansion(token):
        raise SubmitConfigError(
            "otel.token_env",
            f"the token in {name} would not reach the backend unchanged: the collector reads it "
            "as YAML, so it must use only letters, digits and ._~+/=:- and must not read as a "
            "number with leading zeros or a sign, a float, a boolean or null; issue a token in "
            "the usual base64url or hex alphabet",
        )
    return token


def _token_survives_expansion(token: str) -> bool:
    if not _TOKEN_CHARACTERS.fullmatch(token):
        return False
    if _TOKEN_AS_INTEGER.fullmatch(token):
        return abs(int(token)) <= _INT64_MAX
    return not _TOKEN_CHANGED_BY_YAML.fullmatch(token) and _yaml_reads_as_text(token)


def _yaml_reads_as_text(token: str) -> bool:
    """YAML 1.1's implicit types (what PyYAML resolves) besides the 1.2 ones above: dates and
    times (the collector turns ``2001-12-14`` into a time and refuses to start), sexagesimal
    numbers, ``=`` and ``<<``."""
    import yaml

    tag = yaml.resolver.Resolver().resolve(yaml.ScalarNode, token, (True, False))
    return bool(tag == "tag:yaml.org,2002:str")


def refuse_written_token(
    config: SubmitConfig,
    inputs: Mapping[str, str],
    environ: Mapping[str, str] | None = None,
) -> None:
    """Refuse a rendering whose inputs hold the ingest token's value itself.

    The rendered files name the token only as ``${env:<token_env>}``; a value typed into the
    config (a service name, an endpoint's query) would be written into the job directory as is.
    The token is known where the executor renders (it forwards it to the job), so its value is
    looked for in every string of the config and in ``inputs`` (the benchmark, the job
    directory, by the name an error gives them). Tokens shorter than ``TOKEN_SEARCHED_FROM``
    characters are not looked for.
    """
    token = _token_to_search(config, environ)
    if token is None:
        return
    sections = {
        "services": config.services,
        "compute": {config.compute.name: config.compute},
        "driver": config.driver,
        "job": config.job,
        "otel": config.otel,
    }
    found = [(dotted(path), value) for path, value in _strings(sections, [])]
    for path, value in [*found, *inputs.items()]:
        if token in value:
            raise SubmitConfigError(
                path,
                f"holds the ingest token (the value of {config.otel.token_env}), which would be "
                "written into the job directory; remove it: the token travels in the "
                "environment only",
            )


def refuse_rendered_token(
    config: SubmitConfig, text: str, template: str, environ: Mapping[str, str] | None = None
) -> None:
    """Refuse a rendering whose text holds the token's value when no input did: a template
    (an override) that writes it out."""
    token = _token_to_search(config, environ)
    if token is not None and token in text:
        raise TemplateError(
            template,
            f"renders the ingest token (the value of {config.otel.token_env}) into the config; "
            f"refer to it as ${{env:{config.otel.token_env}}} (the backend.token value)",
        )


def _token_to_search(config: SubmitConfig, environ: Mapping[str, str] | None) -> str | None:
    token = (os.environ if environ is None else environ).get(config.otel.token_env, "")
    return token if len(token) >= TOKEN_SEARCHED_FROM else None


def _strings(value: object, path: list[str | int]) -> Iterator[tuple[list[str | int], str]]:
    """Every string of the config's sections, keys included, with the key path it is written
    at: a section's ``name`` is its key already, its ``options`` are keys of its own."""
    if isinstance(value, str):
        yield path, value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            if item.name != "name":
                inner = path if item.name == "options" else [*path, item.name]
                yield from _strings(getattr(value, item.name), inner)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key, [*path, str(key)])
            yield from _strings(item, [*path, str(key)])
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _strings(item, [*path, index])
