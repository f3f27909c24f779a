"""The token and tenant rules judged against the real collector (issue 10, class 1).

Two ways: the corpus's token-rule cases run on the real collector (what ``validate`` refuses
really leaks the token into a file or the log, or really loses payloads at the routing proxy;
the built-in rendering does neither), and a hypothesis test that rewires the built-in blocks at
random (which processors each pipeline runs, which exporters and connectors it feeds) and
asserts the check refuses exactly the rewirings that would leak the token or drop the tenant
attribute, by a model of the data flow on every example and by real runs on a sample.
"""

from __future__ import annotations

import copy
import random
import secrets
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from support import helpers
from support.otelcol import collector_binary
from support.tenant_run import run_config

from nemo_gym.orchestration.executors.otel import CollectorConfigError, validate_collector_config

CORPUS = helpers.DATA / "hostile" / "collector"
GOLDEN = helpers.REPO / "tests" / "golden" / "example" / "current" / "otlp_http+file.yaml"
SIGNALS = ("traces", "metrics", "logs")
BACKEND = "otlp_http/backend"
# Corpus cases whose harm shows in a short real run (a token in a file name or a span-metrics
# dimension needs the renamed path or a span attribute, so those are judged by check alone).
REAL_CASES = {
    "c1-tenant-pipeline-to-file": "leaks",
    "c1-tenant-pipeline-to-debug": "leaks",
    "c1-tenant-through-connector-to-file": "leaks",
    "c1-transform-after-tenant": "leaks",
    "c1-token-in-resource-job": "leaks",
    "c1-backend-without-tenant": "drops",
}


def _refused(doc: dict[str, Any]) -> bool:
    try:
        validate_collector_config(yaml.safe_dump(doc))
    except CollectorConfigError:
        return True
    return False


def _token() -> str:
    return "tok" + secrets.token_hex(12)


@pytest.mark.collector
def test_the_builtin_rendering_neither_leaks_nor_drops(tmp_path: Path) -> None:
    doc = yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))
    assert not _refused(doc)
    outcome = run_config(collector_binary("current"), doc, _token(), tmp_path)
    assert not outcome.leaked and outcome.dropped == 0 and outcome.kept >= 3


@pytest.mark.collector
@pytest.mark.parametrize(("case", "harm"), sorted(REAL_CASES.items()))
def test_what_validate_refuses_really_leaks_or_drops(case: str, harm: str, tmp_path: Path) -> None:
    doc = yaml.safe_load((CORPUS / f"{case}.yaml").read_text(encoding="utf-8"))
    assert _refused(doc)
    outcome = run_config(collector_binary("current"), doc, _token(), tmp_path)
    assert outcome.leaked if harm == "leaks" else outcome.dropped > 0, outcome


# -- random rewirings of the built-in blocks ---------------------------------------------------


@cache
def _blocks() -> dict[str, Any]:
    """The built-in rendering's components, without scraping and span metrics (their wiring
    is fixed by the collector and would only narrow the rewirings)."""
    doc = yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))
    del doc["receivers"]["prometheus"]
    del doc["connectors"]["span_metrics"]
    del doc["processors"]["transform/keep_service_name"]
    del doc["processors"]["transform/metric_names"]
    doc["service"]["pipelines"] = {}
    return doc


def _subset(rng: random.Random, items: list[str], least: int) -> list[str]:
    return rng.sample(items, rng.randint(least, len(items)))


def rewiring(rng: random.Random) -> dict[str, Any]:
    doc = copy.deepcopy(_blocks())
    doc["service"]["pipelines"] = _wiring(rng)
    return doc


def _wiring(rng: random.Random) -> dict[str, Any]:
    """The pipelines of a rewiring: all that ``rng`` decides (``_sample`` judges thousands of
    seeds while the tests are collected, without copying the components each time)."""
    pipelines: dict[str, Any] = {}
    for signal in SIGNALS:
        destinations = {
            "forward": f"forward/{signal}",
            "backend": BACKEND,
            "file": f"file/{signal}",
        }
        outs = _subset(rng, list(destinations), 1)
        pipelines[f"{signal}/ingest"] = {
            "receivers": ["otlp"],
            "processors": _subset(rng, ["resource/job", "batch", "resource/tenant"], 0),
            "exporters": [destinations[o] for o in outs],
        }
        if "forward" in outs:
            for name in ("a", "b")[: rng.randint(1, 2)]:
                pipelines[f"{signal}/{name}"] = {
                    "receivers": [f"forward/{signal}"],
                    "processors": _subset(rng, ["resource/tenant", "batch"], 0),
                    "exporters": [destinations[o] for o in _subset(rng, ["backend", "file"], 1)],
                }
    return pipelines


def harms(pipelines: dict[str, Any]) -> set[str]:
    """The model, on a rewiring's pipelines: ``leaks`` when a file exporter gets data after
    resource/tenant (the token lands in the file), ``drops`` when the backend gets data no
    resource/tenant saw (the proxy drops it)."""
    found = set()
    for signal in SIGNALS:
        ingest = pipelines[f"{signal}/ingest"]
        tenant_before = "resource/tenant" in ingest["processors"]
        stages = [(tenant_before, ingest)] + [
            (tenant_before or "resource/tenant" in p["processors"], p)
            for pid, p in pipelines.items()
            if pid.startswith(f"{signal}/") and pid != f"{signal}/ingest"
        ]
        for tenant, pipeline in stages:
            for exporter in pipeline["exporters"]:
                if exporter == BACKEND and not tenant:
                    found.add("drops")
                if exporter.startswith("file/") and tenant:
                    found.add("leaks")
    return found


@settings(max_examples=200, deadline=None)
@given(st.randoms(use_true_random=False))
def test_the_check_refuses_exactly_the_harmful_rewirings(rng: random.Random) -> None:
    doc = rewiring(rng)
    assert _refused(doc) == bool(harms(doc["service"]["pipelines"])), yaml.safe_dump(
        doc["service"]["pipelines"]
    )


def _sample() -> list[tuple[int, bool]]:
    """Seeds of a few rewirings: two harmless, two that only leak, one that only drops."""
    wanted = {frozenset(): 2, frozenset({"leaks"}): 2, frozenset({"drops"}): 1}
    found: list[tuple[int, bool]] = []
    for seed in range(10_000):
        kind = frozenset(harms(_wiring(random.Random(seed))))
        if wanted.get(kind, 0):
            wanted[kind] -= 1
            found.append((seed, bool(kind)))
        if not any(wanted.values()):
            return found
    raise AssertionError("the generator no longer makes every kind of rewiring")


@pytest.mark.collector
@pytest.mark.parametrize(("seed", "refused"), _sample())
def test_sampled_rewirings_on_the_real_collector(seed: int, refused: bool, tmp_path: Path) -> None:
    """The real collector agrees with the check: a refused rewiring leaks the token into a file
    or loses payloads at the proxy; an accepted one does neither."""
    doc = rewiring(random.Random(seed))
    assert _refused(doc) == refused
    outcome = run_config(collector_binary("current"), doc, _token(), tmp_path)
    assert (outcome.leaked or outcome.dropped > 0) == refused, outcome
