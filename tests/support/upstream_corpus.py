"""Upstream's own test configs, judged by the package and by the real collector's ``validate``.

The corpus is generated, never hand-picked: for every manifest in ``collector/*/manifest.yaml``,
every YAML file under a ``testdata/`` folder (at any depth) of every component module the
manifest lists, read from the Go module cache at the manifest's release. A new release in a
manifest brings its new files, and so its new cases, with nothing to edit here.

**Which files are component configs.** Upstream's ``config_test.go`` reads a testdata file with
``confmaptest.LoadConf`` and either takes a sub-key named by a component id (``cm.Sub("filter/
include")``) or unmarshals the whole file into the component's config. The rule follows that:

1. a file with a ``service`` key is a whole collector config: its entries under the component's
   section whose id is the component's (``T`` or ``T/name``) are the cases;
2. else, a file with top-level keys that are ids of the component (its type ``T`` or its
   ``deprecated_type`` from ``metadata.yaml``, alone or as ``T/name``): each such key is one
   case, its value the body (other keys are left out, see ``skipped``);
3. else the whole file is one body, with the component's type as its id.

Files left out, with the reason (``skipped``): a file that is not a YAML mapping (a list of
Prometheus target groups, an empty file); OTLP data (a file whose keys are all
``resourceSpans``, ``resourceMetrics``, ``resourceLogs`` or ``resourceProfiles``: inputs and
expected outputs of processing tests).

**The wrapping rule.** Each body becomes a minimal collector config: the component under its id,
wired into one pipeline of the first signal it handles (traces, metrics, logs, in that order;
from the ``stability`` of its ``metadata.yaml``; profiles pipelines need a feature gate), with
an ``otlp`` receiver before it and a ``debug`` exporter after it: a receiver feeds ``debug``, a
processor sits between ``otlp`` and ``debug``, an exporter takes ``otlp``'s data, a connector
is the exporter of a pipeline fed by ``otlp`` and the receiver of one that feeds ``debug`` (its
first signal pair), an extension is listed in ``service.extensions`` beside an
``otlp`` -> ``debug`` pipeline. When the component is ``otlp`` or ``debug`` itself, it takes
that place.

**The judges.** The package: ``validate_collector_config(text, <manifest's dist.version>)``,
token and tenant rules on. The collector: the manifest's binary (``tools/build-otelcol``) runs
``validate`` in the folder holding the file's ``testdata/`` (as upstream's tests run, so their
relative paths resolve), with the job's environment (``support.otelcol.VALIDATE_ENV``). The
binary's verdicts are cached by content hash beside the binary; the runs are parallel.

**Expected disagreements** live in one data file, ``tests/data/upstream_corpus.yaml``: the
stricter-on-purpose cases (package refuses, collector accepts) and the needs-the-binary cases
(collector refuses, no schema can know), each with its reason; and, until they are fixed, the
open gaps (counted against agreement in the figures). Every other disagreement fails
``tests/test_upstream_corpus.py``; so does a listed case that is no longer such a disagreement,
and a case listed for a tenant rule (``reasons.tenant_rules``) that the package still refuses with
those rules off: the policy must be the whole reason, not a cover for a schema's false refusal.

``PYTHONPATH=tests python -m support.upstream_corpus [MANIFEST...]`` prints the figures per manifest (those of docs/guide/fidelity.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from .helpers import REPO

EXPECTATIONS = REPO / "tests" / "data" / "upstream_corpus.yaml"
SECTIONS = ("receivers", "processors", "exporters", "connectors", "extensions")
SIGNALS = ("traces", "metrics", "logs")
OTLP_DATA_KEYS = frozenset({"resourceSpans", "resourceMetrics", "resourceLogs", "resourceProfiles"})
ROOTS = (
    "go.opentelemetry.io/collector/",
    "github.com/open-telemetry/opentelemetry-collector-contrib/",
)
# What the collector's environment holds in a job (as support.otelcol.VALIDATE_ENV).
VALIDATE_ENV = {"OTEL_TOKEN": "validate-only-token", "SLURM_JOB_ID": "4242", "USER": "gym-user"}


@dataclass(frozen=True)
class Component:
    section: str
    module: str
    version: str
    folder: Path  # the module's folder in the Go module cache
    type: str
    deprecated_type: str | None
    signals: tuple[str, ...]  # receivers, processors, exporters
    pairs: tuple[tuple[str, str], ...]  # connectors: (from, to)

    @property
    def short(self) -> str:
        for root in ROOTS:
            if self.module.startswith(root):
                return self.module[len(root) :]
        return self.module

    def is_id(self, key: Any) -> bool:
        kind = str(key).split("/", 1)[0]
        return kind in {self.type, self.deprecated_type} - {None}


@dataclass(frozen=True)
class Case:
    id: str  # <line>/<module>/<path in the module>#<component id>
    manifest: str
    version: str  # the manifest's collector release (dist.version)
    text: str
    cwd: Path


@dataclass
class Corpus:
    manifest: str
    version: str
    line: str
    cases: list[Case] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, why)


def module_cache() -> Path:
    out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _escaped(module: str) -> str:
    """The module path as the module cache spells it (an upper-case letter becomes !lower)."""
    return re.sub(r"[A-Z]", lambda m: "!" + m[0].lower(), module)


def manifests() -> list[str]:
    return sorted(p.parent.name for p in (REPO / "collector").glob("*/manifest.yaml"))


def _manifest(name: str) -> dict[str, Any]:
    path = REPO / "collector" / name / "manifest.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _metadata_signals(metadata: dict[str, Any]) -> tuple[str, ...]:
    stability = (metadata.get("status") or {}).get("stability") or {}
    return tuple(dict.fromkeys(s for group in stability.values() for s in group))


def components(manifest: str, cache_dir: Path) -> list[Component]:
    data = _manifest(manifest)
    found = []
    for section in SECTIONS:
        for entry in data.get(section) or []:
            module, version = entry["gomod"].split()
            folder = cache_dir / f"{_escaped(module)}@{version}"
            metadata_file = folder / "metadata.yaml"
            if not metadata_file.is_file():
                raise FileNotFoundError(
                    f"{module}@{version} is not in the Go module cache; run tools/build-otelcol {manifest}"
                )
            metadata = yaml.safe_load(metadata_file.read_text(encoding="utf-8"))
            declared = _metadata_signals(metadata)
            signals = tuple(s for s in SIGNALS if s in declared)
            pairs = tuple((a, b) for a in SIGNALS for b in SIGNALS if f"{a}_to_{b}" in declared)
            found.append(
                Component(
                    section,
                    module,
                    version,
                    folder,
                    str(metadata["type"]),
                    metadata.get("deprecated_type"),
                    signals,
                    pairs,
                )
            )
    return found


def testdata_files(component: Component) -> list[Path]:
    files = [
        path
        for path in component.folder.rglob("*")
        if path.suffix in (".yaml", ".yml")
        and "testdata" in path.relative_to(component.folder).parts
        and path.is_file()
    ]
    return sorted(files)


def bodies(component: Component, data: Any) -> tuple[list[tuple[str, Any]], str | None]:
    """(component id, body) of each component config a parsed testdata file holds (the rule in
    the module docstring), and why the file or some of its keys are left out (None: nothing)."""
    if not isinstance(data, dict) or not data:
        return [], "not a YAML mapping (no component config)"
    if set(map(str, data)) <= OTLP_DATA_KEYS:
        return [], "OTLP data (a processing test's input or expected output)"
    if "service" in data:
        section = data.get(component.section) or {}
        found = [(str(k), v) for k, v in section.items() if component.is_id(k)]
        return found, None if found else "a whole collector config without this component"
    ids = [key for key in data if component.is_id(key)]
    if ids:
        others = [str(k) for k in data if not component.is_id(k)]
        why = f"keys that are not ids of {component.type}: {', '.join(others)}" if others else None
        return [(str(k), data[k]) for k in ids], why
    return [(component.type, data)], None


def wrap(component: Component, component_id: str, body: Any) -> dict[str, Any]:
    """The minimal collector config around one component (the wrapping rule)."""
    otlp_receiver = {"protocols": {"grpc": {"endpoint": "localhost:4317"}}}
    config: dict[str, Any] = {}
    receivers: dict[str, Any] = {}
    exporters: dict[str, Any] = {}
    pipelines: dict[str, Any] = {}
    extensions: list[str] = []
    if component.section == "connectors":
        source, target = component.pairs[0]
        receivers["otlp"] = otlp_receiver
        exporters["debug"] = {}
        config["connectors"] = {component_id: body}
        inbound, outbound = (f"{source}/in", f"{target}/out")
        pipelines[inbound] = {"receivers": ["otlp"], "exporters": [component_id]}
        pipelines[outbound] = {"receivers": [component_id], "exporters": ["debug"]}
    else:
        signal = component.signals[0] if component.signals else "traces"
        pipeline: dict[str, list[str]] = {"receivers": ["otlp"], "exporters": ["debug"]}
        if component.section == "receivers":
            receivers[component_id] = body
            pipeline["receivers"] = [component_id]
        else:
            receivers["otlp"] = otlp_receiver
        if component.section == "exporters":
            exporters[component_id] = body
            pipeline["exporters"] = [component_id]
        else:
            exporters["debug"] = {}
        if component.section == "processors":
            config["processors"] = {component_id: body}
            pipeline = {"receivers": ["otlp"], "processors": [component_id], "exporters": ["debug"]}
        if component.section == "extensions":
            config["extensions"] = {component_id: body}
            extensions.append(component_id)
        pipelines[signal] = pipeline
    service: dict[str, Any] = {"pipelines": pipelines}
    if extensions:
        service["extensions"] = extensions
    return {"receivers": receivers, **config, "exporters": exporters, "service": service}


def _line_of(version: str) -> str:
    from nemo_gym.orchestration.executors.otel._templating.catalogue import (
        search_path,
        template_set,
    )

    return template_set(search_path([])).line_for(version).name


def dump(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)


def corpus(manifest: str, cache_dir: Path | None = None) -> Corpus:
    cache_dir = cache_dir or module_cache()
    version = str(_manifest(manifest)["dist"]["version"])
    result = Corpus(manifest, version, _line_of(version))
    for component in components(manifest, cache_dir):
        for path in testdata_files(component):
            where = f"{component.short}/{path.relative_to(component.folder)}"
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except yaml.YAMLError:
                result.skipped.append((where, "not YAML the collector would read"))
                continue
            found, why = bodies(component, data)
            if why:
                result.skipped.append((where, why))
            folder = next(p for p in path.parents if p.name == "testdata").parent
            for component_id, body in found:
                result.cases.append(
                    Case(
                        f"{result.line}/{where}#{component_id}",
                        manifest,
                        version,
                        dump(wrap(component, component_id, body)),
                        folder,
                    )
                )
    return result


# -- the judges ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    detail: str  # the collector's error output, or the package's violations


def package_verdict(case: Case, *, tenant_rules: bool = True) -> Verdict:
    import warnings

    from nemo_gym.orchestration.executors.otel import (
        CollectorConfigError,
        validate_collector_config,
    )

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            validate_collector_config(
                case.text, case.version, source=case.id, tenant_rules=tenant_rules
            )
    except CollectorConfigError as exc:
        return Verdict(False, "; ".join(str(v) for v in exc.violations))
    return Verdict(True, "")


def _validate(binary: Path, case: Case) -> Verdict:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", encoding="utf-8") as handle:
        handle.write(case.text)
        handle.flush()
        result = subprocess.run(
            [str(binary), "validate", "--config", f"file:{handle.name}"],
            cwd=case.cwd,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **VALIDATE_ENV},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    detail = "" if result.returncode == 0 else (result.stderr.strip().splitlines() or [""])[-1]
    return Verdict(result.returncode == 0, detail[-600:])


def _key(binary: Path, case: Case) -> str:
    return hashlib.sha256(f"{binary}\0{case.cwd}\0{case.text}".encode()).hexdigest()


def collector_verdicts(
    binary: Path, cases: list[Case], workers: int | None = None
) -> list[Verdict]:
    """The binary's ``validate`` of each case, in parallel, cached by content hash in
    ``validate-verdicts.json`` beside the binary (its folder is keyed by the manifest's hash)."""
    store = binary.parent / "validate-verdicts.json"
    try:
        cached = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cached = {}
    keys = [_key(binary, case) for case in cases]
    todo = [(key, case) for key, case in zip(keys, cases, strict=True) if key not in cached]
    if todo:
        with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2) as pool:
            fresh = pool.map(lambda item: _validate(binary, item[1]), todo)
            for (key, _), verdict in zip(todo, fresh, strict=True):
                cached[key] = [verdict.accepted, verdict.detail]
        staged = store.with_suffix(f".{os.getpid()}.tmp")
        try:
            staged.write_text(json.dumps(cached, sort_keys=True), encoding="utf-8")
            os.replace(staged, store)
        except OSError:
            pass  # a read-only cache: the verdicts are recomputed next time
    return [Verdict(*cached[key]) for key in keys]


# -- expectations and figures -------------------------------------------------------------------


@cache
def expectations(path: Path = EXPECTATIONS) -> dict[str, Any]:
    """A data file of expected disagreements: this corpus's (the default) or another one's (the
    real-world corpus); the reasons are defined once, in this corpus's file."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _reason(kind: str, case_id: str, path: Path) -> str | None:
    key = (expectations(path).get(kind) or {}).get(case_id)
    return None if key is None else expectations()["reasons"][kind][key]


def tenant_rules_reason(case_id: str, path: Path = EXPECTATIONS) -> str | None:
    """The case's stricter-on-purpose reason key when that reason is the tenant rules alone."""
    key = (expectations(path).get("stricter_on_purpose") or {}).get(case_id)
    return key if key in expectations()["reasons"]["tenant_rules"] else None


def stricter_reason(case_id: str, path: Path = EXPECTATIONS) -> str | None:
    return _reason("stricter_on_purpose", case_id, path)


def binary_reason(case_id: str, path: Path = EXPECTATIONS) -> str | None:
    return _reason("needs_the_binary", case_id, path)


def gap_reason(case_id: str, path: Path = EXPECTATIONS) -> str | None:
    """A disagreement not fixed yet (``open_gaps``): allowed by the test, counted against the
    agreement in the figures."""
    return _reason("open_gaps", case_id, path)


@dataclass
class Judgement:
    corpus: Corpus
    agreed: int = 0
    stricter: int = 0
    needs_binary: int = 0
    gaps: int = 0
    disagreements: list[str] = field(default_factory=list)  # unlisted, or listed but wrong
    seen: set[str] = field(default_factory=set)  # listed ids found in this corpus

    @property
    def total(self) -> int:
        return len(self.corpus.cases)

    def figures(self) -> str:
        """Agreement counts every disagreement against it, needs-the-binary ones too; the second
        share also counts the stricter-on-purpose cases as agreed (the package's intent)."""
        share = 100 * self.agreed / self.total if self.total else 100.0
        intended = 100 * (self.agreed + self.stricter) / self.total if self.total else 100.0
        return (
            f"{self.corpus.manifest}: {self.total} configs, {self.agreed} agreed ({share:.1f} %; "
            f"{intended:.1f} % with the stricter-on-purpose ones), {self.stricter} stricter on "
            f"purpose, {self.needs_binary} need the binary, {self.gaps} open gaps, "
            f"{len(self.disagreements)} unexpected"
        )


def judge(
    found: Corpus,
    package: list[Verdict],
    collector: list[Verdict],
    expected: Path = EXPECTATIONS,
) -> Judgement:
    """Each case's two verdicts against the expected disagreements listed in ``expected``."""
    judgement = Judgement(found)
    for case, ours, theirs in zip(found.cases, package, collector, strict=True):
        stricter = stricter_reason(case.id, expected)
        blind = binary_reason(case.id, expected)
        gap = gap_reason(case.id, expected)
        if stricter or blind or gap:
            judgement.seen.add(case.id)
        if ours.accepted == theirs.accepted:
            judgement.agreed += 1
            if stricter or blind or gap:
                judgement.disagreements.append(f"{case.id}: listed, but both judges agree")
            continue
        policy = tenant_rules_reason(case.id, expected)
        ruleless = (
            None if ours.accepted or not policy else package_verdict(case, tenant_rules=False)
        )
        if ruleless is not None and not ruleless.accepted:
            judgement.disagreements.append(
                f"{case.id}: listed as {policy}, a tenant rule, but the package refuses it with "
                f"the tenant rules off too ({ruleless.detail})"
            )
        elif not ours.accepted and stricter:
            judgement.stricter += 1
        elif ours.accepted and blind:
            judgement.needs_binary += 1
        elif gap:
            judgement.gaps += 1
        else:
            judgement.disagreements.append(
                f"{case.id}: package {'accepts' if ours.accepted else 'refuses'} "
                f"({ours.detail or '-'}), collector {'accepts' if theirs.accepted else 'refuses'} "
                f"({theirs.detail or '-'})"
            )
    return judgement


def binary_path(manifest: str) -> Path:
    build = REPO / "tools" / "build-otelcol"
    out = subprocess.run([str(build), manifest], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip().splitlines()[-1])


def run(manifest: str) -> Judgement:
    found = corpus(manifest)
    collector = collector_verdicts(binary_path(manifest), found.cases)
    return judge(found, [package_verdict(c) for c in found.cases], collector)


def main(argv: list[str]) -> int:
    status = 0
    for manifest in argv or manifests():
        judgement = run(manifest)
        print(judgement.figures())
        for line in judgement.disagreements:
            print("  " + line)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
