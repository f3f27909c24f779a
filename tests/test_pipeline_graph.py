"""The token reaches the backend on every path and the job directory on none.

For every line x combination x fixture config, this walks the rendered pipeline graph from each
real receiver through connectors to each exporter, collecting the processors on the way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support import helpers

from nemo_gym.orchestration.api import SubmitConfig

CASES = [
    (name, line, combination, text)
    for name, path in helpers.fixture_configs().items()
    for line, combination, text in helpers.render_variants(SubmitConfig.from_yaml(Path(path)))
]
IDS = [f"{name}-{line}-{combination}" for name, line, combination, _ in CASES]


def _sets_authorization(processor_id: str, body: dict | None) -> bool:
    body = body or {}
    if processor_id.split("/")[0] == "resource":
        return any(
            a.get("key") == "Authorization" and a.get("action") in ("insert", "upsert", "update")
            for a in body.get("attributes", [])
        )
    if processor_id.split("/")[0] == "transform":
        statements = [
            s
            for key in ("trace_statements", "metric_statements", "log_statements")
            for group in body.get(key, [])
            for s in (group.get("statements", []) if isinstance(group, dict) else [group])
        ]
        return any(s.startswith('set(attributes["Authorization"]') for s in statements)
    return False


def hops(config: dict) -> dict[str, str]:
    """Exporter -> the collector's own receiver its URL names (the disk queue's hop)."""
    listening = {
        f"http://{body['protocols']['http']['endpoint']}": receiver
        for receiver, body in (config.get("receivers") or {}).items()
        if receiver.split("/")[0] == "otlp" and "http" in (body.get("protocols") or {})
    }
    return {
        exporter: listening[body["endpoint"]]
        for exporter, body in (config.get("exporters") or {}).items()
        if isinstance(body, dict) and body.get("endpoint") in listening
    }


def walk(config: dict) -> Iterator[tuple[str, str, list[str]]]:
    """(source receiver, exporter, processors on the way) for every path in the graph; a hop
    leads on into the pipelines of the receiver it sends to, as a connector does."""
    edges = {c: c for c in config.get("connectors") or {}} | hops(config)
    connectors = set(edges)
    pipelines = config["service"]["pipelines"]

    def follow(
        pipeline_id: str, trail: list[str], visited: frozenset[str]
    ) -> Iterator[tuple[str, list[str]]]:
        pipeline = pipelines[pipeline_id]
        here = [*trail, *pipeline.get("processors", [])]
        for exporter in pipeline["exporters"]:
            if exporter not in connectors:
                yield exporter, here
                continue
            for next_id, nxt in pipelines.items():
                if edges[exporter] in nxt["receivers"] and next_id not in visited:
                    yield from follow(next_id, here, visited | {next_id})

    for pipeline_id, pipeline in pipelines.items():
        for receiver in pipeline["receivers"]:
            if receiver not in connectors and receiver not in edges.values():
                for exporter, processors in follow(pipeline_id, [], frozenset({pipeline_id})):
                    yield f"{pipeline_id}:{receiver}", exporter, processors


@pytest.mark.parametrize(("name", "line", "combination", "text"), CASES, ids=IDS)
def test_token_only_on_the_backend_path(name: str, line: str, combination: str, text: str) -> None:
    config = yaml.safe_load(text)
    processors = config["processors"]
    stamping = {p for p, body in processors.items() if _sets_authorization(p, body)}
    paths = list(walk(config))
    to_backend = [(s, p) for s, e, p in paths if helpers.exports_to_backend(e, line)]
    to_files = [(s, p) for s, e, p in paths if e.split("/")[0] == "file"]

    assert bool(to_backend) == ("otlp_http" in combination)
    assert bool(to_files) == ("file" in combination)
    for source, trail in to_backend:
        assert stamping & set(trail), (
            f"{source} reaches the backend without the Authorization attribute"
        )
    for source, trail in to_files:
        assert not stamping & set(trail), f"{source} carries the token into the job directory"
    # Same data to both destinations: every source that reaches one reaches the other.
    if to_backend and to_files:
        assert {s for s, _ in to_backend} == {s for s, _ in to_files}
    # Every source reaches a destination, for every signal.
    sources = {
        f"{p}:{r}"
        for p, body in config["service"]["pipelines"].items()
        for r in body["receivers"]
        if r not in (config.get("connectors") or {}) and r not in hops(config).values()
    }
    assert sources == {s for s, _, _ in paths}
    # The token is referenced, never present: only as the collector expansion.
    if "otlp_http" in combination:
        assert "${env:OTEL_TOKEN}" in text


def test_walk_finds_a_leak_when_the_token_is_stamped_before_the_fork() -> None:
    """The walker itself must be able to fail: stamp the token in the ingest pipeline."""
    _, _, _, text = next(c for c in CASES if c[2] == "otlp_http+file")
    config = yaml.safe_load(text)
    config["service"]["pipelines"]["traces/ingest"]["processors"].append("resource/tenant")
    stamping = {p for p, b in config["processors"].items() if _sets_authorization(p, b)}
    leaks = [s for s, e, p in walk(config) if e.startswith("file/") and stamping & set(p)]
    assert set(leaks) == {
        "traces/ingest:otlp"
    }  # via file/traces and, through span metrics, file/metrics
    assert len(leaks) == 2
