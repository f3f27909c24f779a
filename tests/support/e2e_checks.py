"""What every end-to-end run must show at its destinations, shared by the e2e and Slurm suites.

Each check compares what the producers reported as accepted (``Result.sent``), what the model
service served and what the node exporters expose with what reached the backend (behind the
routing proxy) and the job directory's files, and fails naming the destination and the item.
"""

from __future__ import annotations

import secrets
from collections import Counter
from typing import Any

import pytest

from .e2e_job import CLUSTER, PRODUCERS, SCRAPE_JOBS, SERVICE_NAME, Result
from .e2e_otlp import SIGNALS, TENANT_ATTRIBUTE, Point, comparable, frozen
from .e2e_services import PROMPT_TOKENS, RUNNING, TTFT, TTFT_BUCKETS

SANDBOX_PROVIDER = "nemo.gym.sandbox.provider"
OVERRIDE = "service.name.override"
CUMULATIVE = 2  # AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
# The span-metrics connector's series (its default namespace) and the templates' buckets, in
# the connector's default unit (ms): 250ms 1s 2s 5s 10s 30s 60s 120s 300s 600s 1800s.
SPAN_METRICS = "traces.span.metrics"
SPAN_METRICS_BUCKETS_MS = tuple(
    1000.0 * s for s in (0.25, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800)
)

ROLLOUTS = "gym.rollouts"  # the producers' counter (e2e_producer.py)


def random_token() -> str:
    return secrets.token_urlsafe(48)


def numeric_token() -> str:
    """A token that looks like a number: the collector must still send it as a string."""
    return str(secrets.randbelow(9 * 10**17) + 10**17)


def difference(got: Counter[Any], want: Counter[Any]) -> str:
    return f"missing {dict(want - got)}, unexpected {dict(got - want)}"


def vllm_name(name: str) -> str:
    return name.replace(":", "_", 1)


# --- what was sent ----------------------------------------------------------------------------


def sent_spans(result: Result) -> Counter[tuple[str, str]]:
    return Counter(
        (name, s["span_id"]) for name, report in result.sent.items() for s in report["spans"]
    )


def sent_logs(result: Result) -> Counter[tuple[str, str]]:
    return Counter((name, body) for name, report in result.sent.items() for body in report["logs"])


def sent_points(result: Result) -> Counter[tuple[Any, ...]]:
    return Counter(
        (name, p["metric"], p["kind"], frozen(p["attributes"]), p["time_unix_nano"], p["value"])
        for name, report in result.sent.items()
        for p in report["points"]
    )


def sent_figures(result: Result) -> dict[str, int]:
    return {
        "spans": sum(sent_spans(result).values()),
        "logs": sum(sent_logs(result).values()),
        "points": sum(sent_points(result).values()),
    }


# --- checks shared by both destinations -------------------------------------------------------


def check_resources(
    result: Result, items: dict[str, list[Any]], where: str, *, tenant: bool
) -> None:
    job = result.job
    expected = {
        "service.name": SERVICE_NAME,
        "user": result.user,
        "run_id": job.gym_job_id,
        "slurm_job_id": result.slurm_job_id,  # a string, although it looks like a number
        "benchmark": job.benchmark,
        "cluster": CLUSTER,
        "model": job.model_name,
    }
    producers = {p.service_name for p in PRODUCERS} | set(SCRAPE_JOBS)
    seen_overrides = set()
    for signal_name, signal_items in items.items():
        for resource in {frozen(i.resource): i.resource for i in signal_items}.values():
            for key, value in expected.items():
                assert resource.get(key) == value, (
                    f"{where} {signal_name}: {key}={resource.get(key)!r}, want {value!r}"
                )
                assert type(resource[key]) is str, (
                    f"{where} {signal_name}: {key} is {type(resource[key]).__name__}"
                )
            assert resource.get(OVERRIDE) in producers, (
                f"{where} {signal_name}: {OVERRIDE}={resource.get(OVERRIDE)!r}"
            )
            seen_overrides.add(resource[OVERRIDE])
            if tenant:
                assert resource.get(TENANT_ATTRIBUTE) == job.token, (
                    f"{where} {signal_name}: no tenant attribute"
                )
            else:
                assert TENANT_ATTRIBUTE not in resource, (
                    f"{where} {signal_name}: the tenant attribute (the token) is here"
                )
    assert seen_overrides == producers, f"{where}: producers seen {sorted(seen_overrides)}"


def check_sdk_items(result: Result, items: dict[str, list[Any]], where: str) -> None:
    """Every span, log record and SDK metric point sent is here exactly once, nothing else."""
    spans = Counter((s.resource[OVERRIDE], s.span_id) for s in items["traces"])
    assert spans == sent_spans(result), (
        f"{where}: spans differ: {difference(spans, sent_spans(result))}"
    )
    logs = Counter((r.resource[OVERRIDE], r.body) for r in items["logs"])
    assert logs == sent_logs(result), (
        f"{where}: log records differ: {difference(logs, sent_logs(result))}"
    )
    producers = {p.service_name for p in PRODUCERS}
    points = Counter(
        (p.resource[OVERRIDE], p.metric, p.kind, frozen(p.attributes), p.time_unix_nano, p.value)
        for p in items["metrics"]
        if p.resource[OVERRIDE] in producers and not p.metric.startswith(SPAN_METRICS)
    )
    assert points == sent_points(result), (
        f"{where}: SDK metric points differ: {difference(points, sent_points(result))}"
    )
    # The producers' last batch, flushed by their shutdown: accepted, and so compared above.
    last = {
        name for name, report in result.sent.items() for s in report["spans"] if "last" in s["name"]
    }
    assert last == producers, f"no last batch from {producers - last}"


def scraped(points: list[Point], job_name: str) -> dict[str, list[Point]]:
    by_name: dict[str, list[Point]] = {}
    for p in points:
        if p.resource.get(OVERRIDE) == job_name:
            by_name.setdefault(p.metric, []).append(p)
    return by_name


def check_kind(points: list[Point], exposition_type: str, where: str) -> None:
    kinds = {(p.kind, p.monotonic, p.temporality) for p in points}
    want = {
        "gauge": {("gauge", None, None)},
        "counter": {("sum", True, CUMULATIVE)},
        "histogram": {("histogram", None, CUMULATIVE)},
    }[exposition_type]
    assert kinds == want, f"{where}: {kinds}, want {want} for a Prometheus {exposition_type}"


def check_scraped_metrics(result: Result, points: list[Point], where: str) -> None:
    assert not [p.metric for p in points if ":" in p.metric], f"{where}: metric names with ':' left"
    # The model service: vLLM's names, renamed after parsing, so the types are intact.
    policy = scraped(points, "gym-vllm/policy")
    for name, kind in ((RUNNING, "gauge"), (PROMPT_TOKENS, "counter"), (TTFT, "histogram")):
        assert vllm_name(name) in policy, (
            f"{where}: {vllm_name(name)} missing from the model service's metrics"
        )
        check_kind(policy[vllm_name(name)], kind, f"{where} {vllm_name(name)}")
    for p in (p for series in policy.values() for p in series if p.metric.startswith("vllm_")):
        assert p.attributes.get("model_name") == result.job.model_name, (
            f"{where}: label model_name={p.attributes}"
        )
        assert p.attributes.get("gym_service") == "policy"
    assert {p.bounds for p in policy[vllm_name(TTFT)]} == {TTFT_BUCKETS}
    # One more scrape after the last traffic saw the final counters.
    assert (
        max(p.value for p in policy[vllm_name(PROMPT_TOKENS)]) == result.model.prompt_tokens_total
    )
    assert max(p.value for p in policy[vllm_name(TTFT)]) == result.model.requests
    # The judge serves the fixture exposition of a real vLLM: every family arrives renamed.
    judge = scraped(points, "gym-vllm/judge")
    for name, kind in result.exporters["judge"].metric_names().items():
        assert vllm_name(name) in judge, (
            f"{where}: {vllm_name(name)} missing from the judge's metrics"
        )
        check_kind(judge[vllm_name(name)], kind, f"{where} judge {name}")
    # DCGM and node_exporter keep their names, so the standard dashboards apply unchanged.
    for job_name in ("dcgm", "node"):
        got = scraped(points, job_name)
        for name, kind in result.exporters[job_name].metric_names().items():
            assert name in got, f"{where}: {name} missing from the {job_name} metrics"
            check_kind(got[name], kind, f"{where} {job_name} {name}")


def check_span_metrics(points: list[Point], where: str) -> None:
    calls = [p for p in points if p.metric == f"{SPAN_METRICS}.calls"]
    durations = [p for p in points if p.metric == f"{SPAN_METRICS}.duration"]
    assert calls and durations, f"{where}: no span-metrics series"
    for producer in PRODUCERS:
        own = [p for p in calls if p.attributes.get(OVERRIDE) == producer.service_name]
        assert own, f"{where}: no span-metrics series with {OVERRIDE}={producer.service_name}"
        providers = {p.attributes.get(SANDBOX_PROVIDER) for p in own}
        want = {None, producer.sandbox_provider} if producer.sandbox_provider else {None}
        assert providers == want, (
            f"{where}: {producer.service_name}: {SANDBOX_PROVIDER} {providers}"
        )
    assert {p.bounds for p in durations} == {SPAN_METRICS_BUCKETS_MS}, f"{where}: buckets"


def check_destination(
    result: Result, items: dict[str, list[Any]], where: str, *, tenant: bool
) -> None:
    check_resources(result, items, where, tenant=tenant)
    check_sdk_items(result, items, where)
    check_scraped_metrics(result, items["metrics"], where)
    check_span_metrics(items["metrics"], where)


def check_backend(result: Result) -> dict[str, list[Any]]:
    proxy = result.proxy
    assert proxy is not None
    assert not proxy.dropped, (
        f"the routing proxy dropped payloads without the tenant attribute: {dict(proxy.dropped)}"
    )
    assert all(proxy.kept[s] for s in SIGNALS), f"requests kept per signal: {dict(proxy.kept)}"
    assert set(proxy.headers) == {f"Bearer {result.job.token}"}, (
        "an Authorization header was missing or wrong"
    )
    items = {s: result.backend_items(s) for s in SIGNALS}
    check_destination(result, items, "backend", tenant=True)
    return items


def check_files(result: Result) -> dict[str, list[Any]]:
    items = {s: result.file_items(s) for s in SIGNALS}
    check_destination(result, items, "files", tenant=False)
    return items


def check_no_token(result: Result) -> None:
    """Not in any file of the job directory (collector.yaml included), not in the collector's log."""
    token = result.job.token.encode()
    assert result.config_path.is_file()
    leaks = [
        str(p.relative_to(result.job_dir))
        for p in result.job_dir.rglob("*")
        if p.is_file() and token in p.read_bytes()
    ]
    assert not leaks, f"the token is written in {leaks}"
    lines = [line for line in result.collector_log.read_bytes().splitlines() if token in line]
    shown = "\n".join(
        line.replace(token, b"<TOKEN>").decode(errors="replace")[:700] for line in lines[:5]
    )
    if lines:  # not an assert: its report would print the lines, token and all
        pytest.fail(
            f"the token is in {len(lines)} lines of the collector's log output, e.g.:\n{shown}"
        )


def figures(
    result: Result, backend: dict[str, list[Any]] | None, files: dict[str, list[Any]] | None
) -> str:
    def count(items: dict[str, list[Any]] | None) -> str:
        if items is None:
            return "-"
        return "/".join(str(len(items[s])) for s in SIGNALS)

    sent = sent_figures(result)
    return (
        f"[{result.job.line} {'+'.join(result.job.exporters)}] sent by the producers: "
        f"{sent['spans']} spans, {sent['logs']} log records, {sent['points']} metric points; "
        f"received spans/points/logs (points incl. scraped and span metrics): "
        f"backend {count(backend)}, files {count(files)}"
    )


def check_run(result: Result) -> str:
    assert result.exit_code == 0, f"the collector exited with {result.exit_code}"
    backend = check_backend(result) if "otlp_http" in result.job.exporters else None
    if "file" in result.job.exporters:
        files = check_files(result)
    else:
        files = None
        assert not list(result.otel_dir.glob("*.jsonl")), "files written without the file exporter"
    if backend is not None and files is not None:
        for s in SIGNALS:
            in_backend = Counter(comparable(i) for i in backend[s])
            in_files = Counter(comparable(i) for i in files[s])
            assert in_backend == in_files, (
                f"{s}: backend and files differ: {sum((in_backend - in_files).values())} items only at the backend, {sum((in_files - in_backend).values())} only in the files"
            )
    summary = figures(result, backend, files)
    print(summary)
    check_no_token(result)
    return summary


# --- the end of the job: what only a clean stop delivers ---------------------------------------


def span_counts(points: list[Point], metric: str) -> Counter[tuple[str, str]]:
    """Per (producer, span name), the count a span-metrics series (``calls``, or the
    ``duration`` histogram's count) ended at: each cumulative series' last value."""
    latest: dict[tuple[Any, ...], Point] = {}
    for p in points:
        if p.metric == metric:
            series = frozen(p.attributes)
            if series not in latest or p.time_unix_nano > latest[series].time_unix_nano:
                latest[series] = p
    counts: Counter[tuple[str, str]] = Counter()
    for p in latest.values():
        counts[(p.attributes.get(OVERRIDE), p.attributes.get("span.name"))] += p.value or 0
    return counts


def sent_span_counts(result: Result) -> Counter[tuple[str, str]]:
    return Counter(
        (name, s["name"]) for name, report in result.sent.items() for s in report["spans"]
    )


def check_span_counts(result: Result, points: list[Point], where: str) -> None:
    """The span metrics count every span sent, the last ones (sent as the producers exit) too."""
    want = sent_span_counts(result)
    for metric in (f"{SPAN_METRICS}.calls", f"{SPAN_METRICS}.duration"):
        got = span_counts(points, metric)
        assert got == want, f"{where}: {metric} counts differ: {difference(got, want)}"


def check_final_counter(result: Result, points: list[Point], where: str) -> None:
    """Each producer's ``gym.rollouts`` counter arrived with the value it ended at."""
    final: dict[tuple[Any, ...], float] = {}
    for name, report in result.sent.items():
        for p in report["points"]:
            if p["metric"] == ROLLOUTS:
                key = (name, frozen(p["attributes"]))
                final[key] = max(final.get(key, 0.0), p["value"])
    arrived: dict[tuple[Any, ...], float] = {}
    for p in points:
        if p.metric == ROLLOUTS:
            key = (p.resource.get(OVERRIDE), frozen(p.attributes))
            arrived[key] = max(arrived.get(key, 0.0), p.value or 0.0)
    assert final, "the producers reported no gym.rollouts points"
    assert arrived == final, f"{where}: final {ROLLOUTS} values {arrived}, want {final}"
