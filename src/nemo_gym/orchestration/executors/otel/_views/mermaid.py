"""A collector config's pipeline graph as a Mermaid flowchart, the tenant path marked.

Receivers, exporters and connectors are one node each; a pipeline is a box holding its own
processors (the collector runs one instance per pipeline). The tenant processors are the ones
the tenant rules recognise (:func:`.._checks.tenant.tenant_processors`: the token's expansion
upserted as ``Authorization``): from such a processor on, the links of its pipeline are thick
and its nodes are marked, and so is every pipeline fed through a connector or a hop (an
exporter sending to the collector's own loopback receiver, drawn as a dotted link) from a
marked one.
Reviewers see at a glance that the token goes to the backend and nowhere else (the
job-directory files); a processor the rules would not accept as the tenant marks nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._checks.graph import pipelines_of
from .._checks.hops import queue_hops
from .._checks.tenant import TENANT_KEY, tenant_processors

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
# Node shapes: receivers stadium, exporters parallelogram, connectors hexagon.
_SHAPES = {"receivers": ('(["', '"])'), "exporters": ('[/"', '"/]'), "connectors": ('{{"', '"}}')}


def _node_id(prefix: str, name: str) -> str:
    return f"{prefix}_{_UNSAFE.sub('_', name)}"


def _tenant_pipelines(config: Mapping[str, Any], token_env: str) -> dict[str, int]:
    """Pipeline -> index of its first tenant processor; -1 when the attribute arrives with its
    data, from a marked pipeline through a connector."""
    pipelines = pipelines_of(config)
    connectors = set((config.get("connectors") or {}).keys())
    hops = queue_hops(config)
    tenant_ids = tenant_processors(config, token_env)
    marked: dict[str, int] = {}
    for name, pipeline in pipelines.items():
        for index, processor in enumerate(pipeline.get("processors") or []):
            if processor in tenant_ids:
                marked[name] = index
                break
    changed = True
    while changed:
        changed = False
        feeding = {
            hops.get(exporter, exporter)
            for name in marked
            for exporter in pipelines[name].get("exporters") or []
            if exporter in connectors or exporter in hops
        }
        for name, pipeline in pipelines.items():
            if name not in marked and feeding & set(pipeline.get("receivers") or []):
                marked[name] = -1
                changed = True
    return marked


def pipeline_mermaid(config: Mapping[str, Any], token_env: str) -> str:
    """The Mermaid flowchart of ``config``'s pipelines (a config whose shape the checks
    accepted), the tenant path of the token in ``token_env`` marked."""
    pipelines = pipelines_of(config)
    connectors = set((config.get("connectors") or {}).keys())
    tenant = _tenant_pipelines(config, token_env)
    lines = [
        "flowchart LR",
        f"  %% thick links and red nodes carry the tenant attribute ({TENANT_KEY})",
    ]
    marked_nodes: list[str] = []

    def endpoint(name: str, role: str) -> str:
        section = "connectors" if name in connectors else role
        return _node_id(section[0], name)

    declared: set[str] = set()
    for pipeline in pipelines.values():
        for role in ("receivers", "exporters"):
            for name in pipeline.get(role) or []:
                node = endpoint(name, role)
                if node not in declared:
                    declared.add(node)
                    section = "connectors" if name in connectors else role
                    left, right = _SHAPES[section]
                    lines.append(f"  {node}{left}{name}{right}")
    for exporter, receiver in queue_hops(config).items():
        hop = (_node_id("e", exporter), _node_id("r", receiver))
        if set(hop) <= declared:
            lines.append(f'  {hop[0]} -.->|"loopback"| {hop[1]}')
    for name, pipeline in pipelines.items():
        box = _node_id("p", name)
        processors = pipeline.get("processors") or []
        start = tenant.get(name)
        steps = [f"{box}_{i}" for i in range(len(processors))]
        if steps:
            lines.append(f'  subgraph {box}["{name}"]')
            for node, processor in zip(steps, processors, strict=True):
                lines.append(f'    {node}["{processor}"]')
            lines.append("  end")
        if start is not None:
            marked_nodes.extend(steps[max(start, 0) :])
        for index in range(1, len(steps)):
            arrow = "==>" if start is not None and index > start else "-->"
            lines.append(f"  {steps[index - 1]} {arrow} {steps[index]}")
        receivers = [endpoint(r, "receivers") for r in pipeline.get("receivers") or []]
        exporters = [endpoint(e, "exporters") for e in pipeline.get("exporters") or []]
        into = steps[0] if steps else None
        for receiver in receivers:
            arrow = "==>" if start == -1 else "-->"
            if into is not None:
                lines.append(f"  {receiver} {arrow} {into}")
            else:
                for exporter in exporters:
                    lines.append(f'  {receiver} {arrow}|"{name}"| {exporter}')
        if into is not None:
            for exporter in exporters:
                arrow = "==>" if start is not None else "-->"
                lines.append(f"  {steps[-1]} {arrow} {exporter}")
        if start is not None:
            marked_nodes.extend(exporters)
    lines.append("  classDef tenant stroke:#c00,stroke-width:3px")
    if marked_nodes:
        unique = list(dict.fromkeys(marked_nodes))
        lines.append(f"  class {','.join(unique)} tenant")
    return "\n".join(lines) + "\n"
