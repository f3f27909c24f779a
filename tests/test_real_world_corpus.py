"""Collector configs written by other projects: the package and the real ``validate`` agree.

The corpus (``support/real_world_corpus.py``, whose docstring says which manifest judges a config) is the
configs copied into ``tests/data/real_world/``, named in its ``sources.yaml``. Every disagreement
fails, except the cases listed in ``tests/data/real_world/expected.yaml``; a listed case that is
not such a disagreement (any more) fails too, so the list stays exact.
"""

from __future__ import annotations

import os
import re

import pytest
import yaml
from support import real_world_corpus as real_world
from support import upstream_corpus as upstream
from support.otelcol import collector_binary, go_module_cache

pytestmark = pytest.mark.collector

MANIFESTS = upstream.manifests()
KINDS = ("stricter_on_purpose", "needs_the_binary", "open_gaps")


@pytest.fixture(scope="module")
def corpora() -> tuple[dict[str, upstream.Corpus], list[tuple[str, list[str]]]]:
    cache_dir = go_module_cache()
    try:
        return real_world.corpora(cache_dir)
    except FileNotFoundError as exc:  # a manifest's module is not in the cache
        if os.environ.get("CI") == "true":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def judgements(corpora: tuple[dict[str, upstream.Corpus], list]) -> dict[str, upstream.Judgement]:
    found, _ = corpora
    return {
        manifest: real_world.judge(found[manifest], collector_binary(manifest))
        for manifest in MANIFESTS
    }


@pytest.mark.parametrize("manifest", MANIFESTS)
def test_package_and_collector_agree_on_real_world_configs(
    manifest: str, judgements: dict[str, upstream.Judgement]
) -> None:
    judgement = judgements[manifest]
    print(judgement.figures())
    assert judgement.total >= 5, "the corpus shrank: is sources.yaml complete?"
    assert not judgement.disagreements, "\n".join(judgement.disagreements)


def test_about_one_hundred_thirty_configs_are_judged(corpora: tuple[dict, list]) -> None:
    found, _ = corpora
    judged = {case.id.split("/", 1)[1].split("#")[0] for c in found.values() for case in c.cases}
    assert 120 <= len(judged) <= 150, sorted(judged)


def test_every_listed_case_is_in_the_corpus(judgements: dict[str, upstream.Judgement]) -> None:
    data = upstream.expectations(real_world.EXPECTATIONS)
    listed = set().union(*(set(data.get(kind) or {}) for kind in KINDS))
    seen = set().union(*(j.seen for j in judgements.values()))
    assert listed <= seen, f"listed but in no corpus: {sorted(listed - seen)}"
    reasons = upstream.expectations()["reasons"]
    for kind in KINDS:
        unknown = set((data.get(kind) or {}).values()) - set(reasons[kind])
        assert not unknown, f"{kind}: reasons not defined in upstream_corpus.yaml: {unknown}"


def test_the_index_names_every_data_file_and_its_source() -> None:
    sources = real_world.sources()
    files = {p.stem for p in real_world.DATA.glob("*.yaml")} - {"sources", "expected"}
    assert files == set(sources), "a data file without its source, or a source without its file"
    for name, source in sources.items():
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", source["repository"]), name
        assert source["path"] and re.fullmatch(r"[0-9a-f]{40}", source["commit"]), name
        assert source["licence"], name


def test_not_judged_says_which_components_no_manifest_builds(corpora: tuple[dict, list]) -> None:
    _, unjudged = corpora
    missing: dict[str, set[str]] = {}
    for case_name, components in unjudged:
        missing.setdefault(case_name.split("#")[0], set()).update(components)
    said = {
        name: source["not_judged"]
        for name, source in real_world.sources().items()
        if "not_judged" in source
    }
    expected = {
        name: f"components {', '.join(sorted(components))} not built here"
        for name, components in missing.items()
    }
    assert said == expected
    assert len(said) <= 5, "keep only a few configs no manifest judges"


def test_a_manifest_holding_two_configs_gives_two_cases() -> None:
    text = yaml.safe_dump_all(
        [
            {"kind": "Service", "data": {"relay": "not this one"}},
            {"kind": "ConfigMap", "data": {"a": "receivers: {}\n", "b.yaml": {"exporters": {}}}},
        ]
    )
    found = real_world.extract("x", text, [["data", "a"], ["data", "b.yaml"]])
    assert found == [("x#data.a", "receivers: {}\n"), ("x#data.b.yaml", "exporters: {}\n")]
    assert real_world.extract("x", "service: {}\n", None) == [("x", "service: {}\n")]
    with pytest.raises(KeyError, match=r"no YAML document has data\.c"):
        real_world.extract("x", text, [["data", "c"]])
