"""The JSON Schemas the package ships are themselves valid JSON Schemas (2020-12).

A schema that is not one still loads, and a validator then judges configs by whatever part of
it makes sense to it: a misspelt keyword is ignored, a wrong type accepts everything. Platform
teams validate against these files with their own tools, so the files are checked as schemas.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from support import helpers

# Schemas end in .schema.json; the folder also ships generated data (the OTTL facts, ottl-*.json).
SCHEMAS = sorted((helpers.REPO / "schemas").glob("*.schema.json"))


def test_every_shipped_schema_is_listed() -> None:
    assert {p.name for p in SCHEMAS} >= {
        "submit-config.schema.json",
        "collector-current.schema.json",
        "collector-legacy.schema.json",
    }


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_the_shipped_schema_is_a_2020_12_schema(path: Path) -> None:
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_the_check_would_catch_a_broken_schema() -> None:
    with pytest.raises(SchemaError):
        Draft202012Validator.check_schema({"type": "objekt"})
