"""A large document's violations are explained on a narrowed copy, and say what the whole would.

jsonschema explains a failure by validating again in Python, which takes seconds on a megabyte
of config; the package hands it a copy that keeps, in every large list or mapping, the first
entry and the entries where jsonschema-rs found errors, and uses it only when jsonschema-rs finds
the same errors in the copy. These tests hold the narrowed explanation to the explanation of the
whole document, including where narrowing would change the verdict and must not be used.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import helpers, mutations

from nemo_gym.orchestration.executors.otel._common import json_schema
from nemo_gym.orchestration.executors.otel._common.json_schema import violations

# The renderings that scrape (a minimal config has no scrape jobs), one per line and config.
GOLDEN = [
    p
    for p in sorted((helpers.REPO / "tests" / "golden").glob("*/*/otlp_http+file.yaml"))
    if "prometheus:" in p.read_text(encoding="utf-8")
]
JOBS = 30  # scrape jobs in the enlarged documents: more than a narrowed list keeps


def _enlarged(path: Path) -> dict[str, Any]:
    """A golden rendering with JOBS scrape jobs and JOBS extra OTLP receivers."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    scrape = document["receivers"]["prometheus"]["config"]["scrape_configs"]
    scrape[:] = [copy.deepcopy(scrape[0]) | {"job_name": f"job{n}"} for n in range(JOBS)]
    for n in range(JOBS):
        document["receivers"][f"otlp/extra{n}"] = copy.deepcopy(document["receivers"]["otlp"])
    return document


@functools.cache
def _documents() -> list[tuple[str, dict[str, Any]]]:
    return [(f"collector-{p.parent.name}.schema.json", _enlarged(p)) for p in GOLDEN]


def _whole(document: Any, schema: str, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The violations jsonschema finds explaining the whole document (nothing narrowed)."""
    with monkeypatch.context() as patched:
        patched.setattr(json_schema, "_NARROW_ABOVE", 10**9)
        return violations(document, schema)


def test_enlarged_documents_are_valid() -> None:
    for schema, document in _documents():
        assert violations(document, schema) == []


def test_an_error_deep_in_a_long_list_is_explained_on_a_small_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    schema, document = _documents()[0]
    document = copy.deepcopy(document)
    document["receivers"]["prometheus"]["config"]["scrape_configs"][23]["scrape_intervall"] = "5s"
    explained, original, untold = json_schema._explained_instance(document, schema)
    assert untold == 0
    scrape = explained["receivers"]["prometheus"]["config"]["scrape_configs"]
    assert [job["job_name"] for job in scrape] == ["job0", "job23"]
    assert len(explained["receivers"]) == 2  # the first receiver and prometheus
    assert original(("receivers", "prometheus", "config", "scrape_configs", 1)) == (
        "receivers",
        "prometheus",
        "config",
        "scrape_configs",
        23,
    )
    found = violations(document, schema)
    assert [v.path for v in found] == [
        "receivers.prometheus.config.scrape_configs[23].scrape_intervall"
    ]
    assert found == _whole(document, schema, monkeypatch)


def test_a_copy_that_would_change_the_errors_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scrape job of many keys with its required job_name not first: narrowing it would drop
    job_name and add a violation that the document does not have, so only the lists are
    narrowed."""
    schema, document = _documents()[0]
    document = copy.deepcopy(document)
    scrape = document["receivers"]["prometheus"]["config"]["scrape_configs"]
    options = {"honor_labels": False, "honor_timestamps": True, "metrics_path": "/metrics"}
    options |= {"scheme": "http", "sample_limit": 10, "label_limit": 5, "enable_http2": False}
    scrape[5] = options | scrape[5] | {"honor_labelz": True}
    assert len(scrape[5]) > json_schema._NARROW_ABOVE
    explained, _, _ = json_schema._explained_instance(document, schema)
    kept = explained["receivers"]["prometheus"]["config"]["scrape_configs"]
    assert [job["job_name"] for job in kept] == ["job0", "job5"]
    assert kept[1] == scrape[5]  # the mapping whole: its required job_name is still there
    assert len(explained["receivers"]) == len(document["receivers"])  # mappings not narrowed
    found = violations(document, schema)
    assert [v.path for v in found] == ["receivers.prometheus.config.scrape_configs[5].honor_labelz"]
    assert found == _whole(document, schema, monkeypatch)


def test_a_document_wrong_everywhere_gets_the_first_errors_and_a_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    schema, document = _documents()[0]
    document = copy.deepcopy(document)
    for job in document["receivers"]["prometheus"]["config"]["scrape_configs"][4:14]:
        job["scrape_intervall"] = "5s"
    monkeypatch.setattr(json_schema, "MAX_EXPLAINED", 3)
    found = violations(document, schema)
    assert [v.path for v in found] == [
        *(f"receivers.prometheus.config.scrape_configs[{n}].scrape_intervall" for n in (4, 5, 6)),
        "",
    ]
    assert found[-1].message.startswith("7 more schema violations are not listed")


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(data=st.data())
def test_mutated_large_documents_are_explained_as_the_whole(
    data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema, document = data.draw(st.sampled_from(_documents()))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(mutations.paths(document)))
        action = data.draw(st.sampled_from(["replace", "delete", "add", "rename"]))
        document = mutations.mutate(document, path, action, data.draw(mutations.VALUES))
    assert violations(document, schema) == _whole(document, schema, monkeypatch)
