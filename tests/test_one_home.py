"""Each fact has one home: a second copy that could disagree makes one of these fail.

Defaults stated both in the submit config's schema (what users read) and in the dataclass (what
code reads) are proven equal; facts the code needs once (the default token variable, the tenant
key, the backend exporter's type names) are searched for as literals in the package's source.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import yaml
from support import helpers

from nemo_gym.orchestration.executors import otel
from nemo_gym.orchestration.executors.otel._checks.tenant import TenantPolicy
from nemo_gym.orchestration.executors.otel._common.constants import DEFAULT_TOKEN_ENV
from nemo_gym.orchestration.executors.otel._submit.config import Otel
from nemo_gym.orchestration.executors.otel._views.mermaid import pipeline_mermaid

PACKAGE = Path(otel.__file__).parent
SCHEMA = json.loads((helpers.REPO / "schemas" / "submit-config.schema.json").read_text())


def _literals(value: str) -> list[str]:
    """The package modules that hold ``value`` as a whole string literal."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.Constant) and n.value == value for n in ast.walk(tree)):
            found.append(str(path.relative_to(PACKAGE)))
    return found


def _schema_defaults(definition: str) -> dict[str, object]:
    properties = SCHEMA["$defs"][definition]["properties"]
    return {key: body["default"] for key, body in properties.items() if "default" in body}


def _dataclass_defaults(cls: type) -> dict[str, object]:
    return {
        field.name: field.default
        for field in dataclasses.fields(cls)
        if field.default is not dataclasses.MISSING
    }


def test_the_otel_defaults_of_the_schema_and_the_dataclass_agree() -> None:
    in_schema = _schema_defaults("otel")
    in_code = _dataclass_defaults(Otel)
    in_code = {k: list(v) if isinstance(v, tuple) else v for k, v in in_code.items()}
    assert len(in_schema) >= 19
    # Every key the schema gives a default has that default in the code, and no other.
    assert {k: in_code.get(k, "<none>") for k in in_schema} == in_schema
    assert set(in_code) - set(in_schema) <= {
        k for k, body in SCHEMA["$defs"]["otel"]["properties"].items() if "default" not in body
    }


def test_the_default_token_variable_has_one_home() -> None:
    assert SCHEMA["$defs"]["otel"]["properties"]["token_env"]["default"] == DEFAULT_TOKEN_ENV
    assert Otel().token_env == TenantPolicy().token_env == DEFAULT_TOKEN_ENV
    assert _literals(DEFAULT_TOKEN_ENV) == ["_common/constants.py"]


def test_the_tenant_key_and_the_backend_type_names_have_one_home() -> None:
    assert _literals("Authorization") == ["_checks/tenant.py"]
    for name in helpers.backend_types() - {"otlp_http"}:  # the role's own name is everywhere
        assert _literals(name) == [], f"{name} belongs in the lines' line.yaml only"


TENANT_AS_LITERAL = """\
receivers: {otlp: {protocols: {http: {endpoint: "localhost:4318"}}}}
processors:
  resource/tenant: {attributes: [{key: Authorization, value: "VALUE", action: upsert}]}
exporters:
  otlp_http/backend:
    endpoint: https://backend.example
    headers: {Authorization: "Bearer ${env:OTEL_TOKEN}"}
service:
  telemetry: {metrics: {level: none}}
  pipelines:
    traces: {receivers: [otlp], processors: [resource/tenant], exporters: [otlp_http/backend]}
"""


def _marked(mermaid: str) -> set[str]:
    lines = [line for line in mermaid.splitlines() if line.strip().startswith("class ")]
    return set(lines[0].split()[1].split(",")) if lines else set()


def test_the_graph_marks_the_tenant_exactly_where_the_rules_accept_it(tmp_path: Path) -> None:
    """The issue's case: the token's value replaced by another literal. The rules refuse the
    config (the backend gets no tenant), and the graph marks no tenant path either."""
    for value, accepted in (("${env:OTEL_TOKEN}", True), ("not-the-token", False)):
        text = TENANT_AS_LITERAL.replace("VALUE", value)
        path = tmp_path / "collector.yaml"
        path.write_text(text, encoding="utf-8")
        validated = helpers.run_cli("validate", path, cwd=tmp_path)
        assert (validated.returncode == 0) == accepted, validated.stderr
        marked = _marked(pipeline_mermaid(yaml.safe_load(text), DEFAULT_TOKEN_ENV))
        assert ("e_otlp_http_backend" in marked) == accepted, marked
        drawn = helpers.run_cli("graph", path, cwd=tmp_path)
        assert (
            drawn.returncode == 0 and ("e_otlp_http_backend" in _marked(drawn.stdout)) == accepted
        )
