"""Collector configs written by other projects, judged by the package and by the real collector.

The upstream corpus (``upstream_corpus.py``) judges upstream's own component test data; this one
judges whole collector configs as other projects ship them: examples, demos, Helm and operator
manifests, SDK integration tests. Each is copied verbatim into ``tests/data/real_world/`` and
named in ``tests/data/real_world/sources.yaml`` (repository, path, commit, licence and, for a
Kubernetes manifest, the key paths of the configs inside it). Nothing is wrapped or edited.

**Which manifest judges a config.** Each line (current, legacy) judges every config whose
components its manifests build, by its minimal manifest when that holds all of them, else by its
platform manifest; a config is judged once per line that can. A component counts as built when
its type or its deprecated type (``metadata.yaml``) is the manifest's: a config written with the
old names (``otlp``, ``otlphttp``, ``spanmetrics``) is judged on the current line too, as platform
teams paste it. A config no manifest can judge is not counted; ``sources.yaml`` says so
(``not_judged``) and the test checks that it says the truth.

**The judges** are the upstream corpus's: ``validate_collector_config(text, <manifest's
dist.version>)`` with token and tenant rules on, and the manifest's binary running ``validate``
with the job's environment, in the data folder (which holds no certificate: a config reading
one from the node needs the binary).

**Expected disagreements** live in ``tests/data/real_world/expected.yaml``, in the upstream
corpus's categories (their reasons defined once, in ``tests/data/upstream_corpus.yaml``). Case
ids are ``<line>/<name>``, or ``<line>/<name>#<key path>`` for a manifest holding configs.

``PYTHONPATH=tests python -m support.real_world_corpus [MANIFEST...]`` prints the figures per manifest.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import upstream_corpus as upstream

DATA = upstream.REPO / "tests" / "data" / "real_world"
SOURCES = DATA / "sources.yaml"
EXPECTATIONS = DATA / "expected.yaml"


@dataclass(frozen=True)
class Config:
    name: str  # <data file name>, or <data file name>#<key path>
    text: str
    used: frozenset[tuple[str, str]]  # (section, component type)


def sources() -> dict[str, dict[str, Any]]:
    return yaml.safe_load(SOURCES.read_text(encoding="utf-8"))["configs"]


def _at(doc: Any, keys: list[str]) -> Any:
    for key in keys:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def extract(name: str, text: str, key_paths: list[list[str]] | None) -> list[tuple[str, str]]:
    """(case name, config text) of each collector config a data file holds: the whole file, or
    the value at each key path in the first YAML document that has it (a string is the config's
    text as written; a mapping is dumped)."""
    if not key_paths:
        return [(name, text)]
    documents = list(yaml.safe_load_all(text))
    found = []
    for keys in key_paths:
        value = next((v for v in (_at(d, keys) for d in documents) if v is not None), None)
        if value is None:
            raise KeyError(f"{name}: no YAML document has {'.'.join(keys)}")
        found.append(
            (f"{name}#{'.'.join(keys)}", value if isinstance(value, str) else upstream.dump(value))
        )
    return found


def used_types(text: str) -> frozenset[tuple[str, str]]:
    config = yaml.safe_load(text) or {}
    return frozenset(
        (section, str(component_id).split("/", 1)[0])
        for section in upstream.SECTIONS
        for component_id in config.get(section) or {}
    )


def configs() -> list[Config]:
    found = []
    for name, source in sources().items():
        text = (DATA / f"{name}.yaml").read_text(encoding="utf-8")
        for case_name, config in extract(name, text, source.get("keys")):
            found.append(Config(case_name, config, used_types(config)))
    return found


def built_types(manifest: str, cache_dir: Path) -> frozenset[tuple[str, str]]:
    """(section, type) of every component the manifest builds, deprecated types included."""
    return frozenset(
        (component.section, kind)
        for component in upstream.components(manifest, cache_dir)
        for kind in (component.type, component.deprecated_type)
        if kind
    )


def judging_manifests(config: Config, built: dict[str, frozenset[tuple[str, str]]]) -> list[str]:
    """The manifests that judge the config: per line, the first (the minimal one sorts before
    ``<line>-platform``) that builds all its components."""
    chosen: dict[str, str] = {}
    for manifest in sorted(built):
        line = manifest.split("-", 1)[0]
        if line not in chosen and config.used <= built[manifest]:
            chosen[line] = manifest
    return sorted(chosen.values())


def missing(config: Config, built: dict[str, frozenset[tuple[str, str]]]) -> list[str]:
    """``section/type`` of the components no manifest builds."""
    everywhere = frozenset().union(*built.values())
    return sorted(f"{section}/{kind}" for section, kind in config.used - everywhere)


def corpora(cache_dir: Path) -> tuple[dict[str, upstream.Corpus], list[tuple[str, list[str]]]]:
    """The cases of each manifest, and the configs no manifest judges (with what they miss)."""
    names = upstream.manifests()
    built = {manifest: built_types(manifest, cache_dir) for manifest in names}
    found = {}
    for manifest in names:
        version = str(upstream._manifest(manifest)["dist"]["version"])
        found[manifest] = upstream.Corpus(manifest, version, upstream._line_of(version))
    unjudged = []
    for config in configs():
        chosen = judging_manifests(config, built)
        if not chosen:
            unjudged.append((config.name, missing(config, built)))
        for manifest in chosen:
            corpus = found[manifest]
            case_id = f"{corpus.line}/{config.name}"
            corpus.cases.append(upstream.Case(case_id, manifest, corpus.version, config.text, DATA))
    return found, unjudged


def judge(corpus: upstream.Corpus, binary: Path) -> upstream.Judgement:
    collector = upstream.collector_verdicts(binary, corpus.cases)
    package = [upstream.package_verdict(case) for case in corpus.cases]
    return upstream.judge(corpus, package, collector, EXPECTATIONS)


def main(argv: list[str]) -> int:
    found, unjudged = corpora(upstream.module_cache())
    status = 0
    for manifest in argv or list(found):
        judgement = judge(found[manifest], upstream.binary_path(manifest))
        print(judgement.figures())
        for line in judgement.disagreements:
            print("  " + line)
            status = 1
    for name, components in unjudged:
        print(f"not judged: {name} (components {', '.join(components)} not built here)")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
