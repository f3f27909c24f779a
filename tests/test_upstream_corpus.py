"""Upstream's own test configs, on every manifest: the package and the real ``validate`` agree.

The corpus (``support/upstream_corpus.py``, whose docstring states the rule) is every component config
under the ``testdata/`` folders of each manifest's component modules, at the manifest's release.
Every disagreement fails, except the cases listed in ``tests/data/upstream_corpus.yaml`` as
stricter on purpose or as needing the binary; a listed case that is not such a disagreement
(any more) fails too, so the lists stay exact.
"""

from __future__ import annotations

import os

import pytest
from support import upstream_corpus as upstream
from support.otelcol import collector_binary, go_module_cache

pytestmark = pytest.mark.collector

MANIFESTS = upstream.manifests()


@pytest.fixture(scope="module")
def judgements() -> dict[str, upstream.Judgement]:
    cache_dir = go_module_cache()
    found = {}
    for manifest in MANIFESTS:
        binary = collector_binary(manifest)
        try:
            corpus = upstream.corpus(manifest, cache_dir)
        except FileNotFoundError as exc:
            if os.environ.get("CI") == "true":
                pytest.fail(str(exc))
            pytest.skip(str(exc))
        collector = upstream.collector_verdicts(binary, corpus.cases)
        package = [upstream.package_verdict(case) for case in corpus.cases]
        found[manifest] = upstream.judge(corpus, package, collector)
    return found


@pytest.mark.parametrize("manifest", MANIFESTS)
def test_package_and_collector_agree_on_upstreams_testdata(
    manifest: str, judgements: dict[str, upstream.Judgement]
) -> None:
    judgement = judgements[manifest]
    print(judgement.figures())
    assert judgement.total >= 50, "the corpus shrank: is the module cache complete?"
    assert not judgement.disagreements, "\n".join(judgement.disagreements)


def test_every_listed_case_is_in_some_corpus(judgements: dict[str, upstream.Judgement]) -> None:
    data = upstream.expectations()
    kinds = ("stricter_on_purpose", "needs_the_binary", "open_gaps")
    listed = set().union(*(set(data.get(kind) or {}) for kind in kinds))
    seen = set().union(*(j.seen for j in judgements.values()))
    assert listed <= seen, f"listed but in no corpus: {sorted(listed - seen)}"
    for kind in kinds:
        reasons = data["reasons"][kind]
        unknown = {v for v in (data.get(kind) or {}).values()} - set(reasons)
        assert not unknown, f"{kind}: reasons not defined: {unknown}"


def test_the_wrapping_rule() -> None:
    """One rule: a processor sits between otlp and debug in a pipeline of its first signal."""
    component = upstream.Component(
        "processors", "m", "v0.1.0", upstream.REPO, "batch", None, ("traces", "metrics"), ()
    )
    doc = upstream.wrap(component, "batch/x", {"timeout": "1s"})
    assert doc["processors"] == {"batch/x": {"timeout": "1s"}}
    assert doc["service"]["pipelines"] == {
        "traces": {"receivers": ["otlp"], "processors": ["batch/x"], "exporters": ["debug"]}
    }
    connector = upstream.Component(
        "connectors",
        "m",
        "v0.1.0",
        upstream.REPO,
        "span_metrics",
        "spanmetrics",
        (),
        (("traces", "metrics"),),
    )
    doc = upstream.wrap(connector, "spanmetrics", None)
    assert doc["service"]["pipelines"] == {
        "traces/in": {"receivers": ["otlp"], "exporters": ["spanmetrics"]},
        "metrics/out": {"receivers": ["spanmetrics"], "exporters": ["debug"]},
    }
    assert upstream.bodies(connector, {"spanmetrics/a": {}, "span_metrics": None, "x": 1}) == (
        [("spanmetrics/a", {}), ("span_metrics", None)],
        "keys that are not ids of span_metrics: x",
    )
    assert upstream.bodies(connector, {"resourceMetrics": []})[0] == []
    assert upstream.bodies(connector, {"dimensions": []}) == (
        [("span_metrics", {"dimensions": []})],
        None,
    )
