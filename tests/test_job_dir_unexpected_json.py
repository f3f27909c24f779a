"""``report`` on job directories holding JSON of shapes the collector and the package never write.

A line of another shape (appended by another program, of another format, nested deeper than the
parser goes) is reported as unreadable and counts nothing; a drain record, a log line or a
targets file of another shape is skipped. The report never ends in a traceback. The property
tests replace one value anywhere in a line the collector writes with any JSON value and compare
the report with the report of the same files without that line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from support import helpers
from test_report_cli import CLEAN_STOP, NOW, _counters, _dropped, _reading, _traces

from nemo_gym.orchestration.executors.otel._job_dir.job_report import read_job_report

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["NaN", "Infinity", "-1", "12", "1e400", "9" * 30]),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, child in items:
        found += _paths(child, (*prefix, key))
    return found


@st.composite
def _changed(draw: st.DrawFn, document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with one value anywhere replaced by any JSON value, or removed."""
    changed = json.loads(json.dumps(document))
    path = draw(st.sampled_from(_paths(changed)))
    holder = changed
    for key in path[:-1]:
        holder = holder[key]
    if isinstance(holder, dict) and draw(st.booleans()):
        del holder[path[-1]]
    else:
        holder[path[-1]] = draw(JSON_VALUES)
    return changed


def _line(document: Any) -> str:
    return json.dumps(document, allow_nan=True) + "\n"


def _job(root: Path, traces: list[str], metrics: list[str], log: str = "") -> Path:
    otel = root / "job" / "otel"
    otel.mkdir(parents=True)
    (otel / "traces.jsonl").write_text("".join(traces), encoding="utf-8")
    (otel / "metrics.jsonl").write_text("".join(metrics), encoding="utf-8")
    (otel / "logs.jsonl").write_text("", encoding="utf-8")
    (otel / "collector.log").write_text(log or CLEAN_STOP, encoding="utf-8")
    return otel.parent


def _report(job_dir: Path) -> dict[str, Any]:
    return read_job_report(job_dir).as_dict()


def _without_reasons(report: dict[str, Any]) -> dict[str, Any]:
    """The report's counts, verdicts and reasons aside (an unreadable line adds a reason)."""
    for signal in report["signals"]:
        signal.pop("verdict")
        for destination in ("files", "backend"):
            if signal[destination]:
                signal[destination].pop("reasons")
                signal[destination].pop("complete")
    report.pop("verdict")
    report.pop("complete")
    report.pop("job_dir")
    return report


def _files_reasons(report: dict[str, Any], signal: str) -> list[str]:
    return next(s for s in report["signals"] if s["signal"] == signal)["files"]["reasons"]


READING = _reading("a", NOW, _counters(3))
SPANS = _traces(3)


@settings(max_examples=150, deadline=None)
@given(changed=_changed(SPANS))
def test_a_span_line_of_another_shape_counts_nothing(tmp_path_factory: Any, changed: Any) -> None:
    root = tmp_path_factory.mktemp("job")
    metrics = [_line(READING)]
    with_line = _report(_job(root / "with", [_line(SPANS), _line(changed)], metrics))
    reasons = _files_reasons(with_line, "traces")
    if any("traces.jsonl:2" in reason for reason in reasons):
        without = _report(_job(root / "without", [_line(SPANS)], metrics))
        assert _without_reasons(with_line) == _without_reasons(without)
    else:  # read as OTLP JSON: whatever it holds counts, on top of the first line's spans
        traces = next(s for s in with_line["signals"] if s["signal"] == "traces")
        assert traces["files"]["items"] >= 3


@settings(max_examples=150, deadline=None)
@given(changed=_changed(_reading("a", NOW + 5_000_000_000, _counters(3))))
def test_a_reading_of_another_shape_counts_nothing(tmp_path_factory: Any, changed: Any) -> None:
    root = tmp_path_factory.mktemp("job")
    traces = [_line(SPANS)]
    with_line = _report(_job(root / "with", traces, [_line(READING), _line(changed)]))
    if any("metrics.jsonl:2" in reason for reason in _files_reasons(with_line, "metrics")):
        without = _report(_job(root / "without", traces, [_line(READING)]))
        assert _without_reasons(with_line) == _without_reasons(without)


def test_lines_of_other_shapes_are_named_and_the_rest_is_counted(tmp_path: Path) -> None:
    others = [
        '{"resourceSpans": 5}',
        '{"resourceSpans": [{"scopeSpans": [{"spans": "abc"}]}]}',  # a string is no list of spans
        '{"resourceSpans": [{"resource": {"attributes": [{"key": ["k"]}]}, "scopeSpans": []}]}',
        "[1, 2]",
        "[" * 100_000 + "]" * 100_000,  # deeper than the parser goes
    ]
    job_dir = _job(
        tmp_path,
        [_line(SPANS), *(other + "\n" for other in others), _line(SPANS)],
        [_line(READING)],
    )
    result = helpers.run_cli("report", job_dir, "--format", "json", cwd=tmp_path)
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    traces = next(s for s in report["signals"] if s["signal"] == "traces")
    assert traces["files"]["items"] == 6
    assert traces["verdict"] == "incomplete"
    assert (
        "5 unreadable line(s): traces.jsonl:2, traces.jsonl:3, traces.jsonl:4, traces.jsonl:5, traces.jsonl:6"
        in traces["files"]["reasons"]
    )


def test_a_counter_that_is_not_a_finite_number_is_no_reading(tmp_path: Path) -> None:
    """The collector's counters are finite; "Infinity" would make every total unreadable."""
    infinite = _reading("a", NOW + 5_000_000_000, _counters(3))
    point = infinite["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["sum"]["dataPoints"][0]
    point["asInt"] = "Infinity"
    job_dir = _job(tmp_path, [_line(SPANS)], [_line(READING), _line(infinite)])
    report = _report(job_dir)
    traces = next(s for s in report["signals"] if s["signal"] == "traces")
    assert traces["received"] == 3  # the first reading's, untouched by the second line
    assert "1 unreadable line(s): metrics.jsonl:2" in _files_reasons(report, "metrics")


def test_records_of_other_shapes_beside_the_files_are_skipped(tmp_path: Path) -> None:
    """A log line whose count is not a number is not the collector's; a targets file of another
    shape names no target."""
    log = (
        _dropped(NOW + 7_000_000_000, 2).replace('"dropped_items": 2', '"dropped_items": "2"')
        + _dropped(NOW + 7_000_000_000, 2).replace('"dropped_items": 2', '"dropped_items": 1e999')
        + _dropped(NOW + 8_000_000_000, 1)
        + "2023-11-14T22:13:20.000Z\terror\tx\tExporting failed. Dropping data.\t"
        + "{" * 50_000
        + "\n"
        + CLEAN_STOP
    )
    job_dir = _job(tmp_path, [_line(SPANS), _line(_traces(1))], [_line(READING)], log)
    otel = job_dir / "otel"
    (otel / "targets").mkdir()
    (otel / "targets" / "node.json").write_text('[{"labels": ["instance"]}]', encoding="utf-8")
    result = helpers.run_cli("report", job_dir, "--format", "json", cwd=tmp_path)
    assert "Traceback" not in result.stderr and result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    traces = next(s for s in report["signals"] if s["signal"] == "traces")
    # One span reached the files after the last reading; the one well-formed loss line names it.
    assert traces["after_last_reading"] == 1
    assert traces["backend"]["reasons"] == [
        "1 lost at the backend after the collector's last reading (collector.log)"
    ]
    assert report["scrape_targets"] == []


def test_a_drain_records_counts_that_are_not_whole_numbers_are_left_out(tmp_path: Path) -> None:
    job_dir = _job(tmp_path, [_line(SPANS)], [_line(READING)])
    config = helpers.REPO / "tests" / "golden" / "long-job" / "current" / "otlp_http+file.yaml"
    (job_dir / "otel" / "collector.yaml").write_bytes(config.read_bytes())
    records = [
        '{"time": "2023-11-14T22:14:00+00:00", "sent": {"traces": Infinity, "logs": 2.5}}',
        '{"time": "2023-11-14T22:15:00+00:00", "sent": {"traces": 2}, "queued_bytes": {}}',
        '{"time": "2023-11-14T22:16:00+00:00", "sent": [1], "queued_bytes": {"traces": "0"}}',
        "[" * 100_000,
    ]
    (job_dir / "otel" / "drain.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    report = _report(job_dir)
    traces = next(s for s in report["signals"] if s["signal"] == "traces")
    logs = next(s for s in report["signals"] if s["signal"] == "logs")
    assert traces["backend"]["sent"] == 3 + 2  # the reading's and the one whole count drained
    assert logs["backend"]["sent"] == 0


def _queue_reading(time: int, queued_bytes: int) -> dict[str, Any]:
    """A reading of the job with the disk queue: every span sent, ``queued_bytes`` of traces
    still in the queue of the hop ``otlp_http/queue``."""
    reading = _reading("a", time, _counters(3))
    metrics = reading["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
    point = {
        "timeUnixNano": str(time),
        "asInt": str(queued_bytes),
        "attributes": [
            {"key": "exporter", "value": {"stringValue": "otlp_http/queue"}},
            {"key": "data_type", "value": {"stringValue": "traces"}},
        ],
    }
    metrics.append({"name": "otelcol_exporter_queue_size", "gauge": {"dataPoints": [point]}})
    return reading


def test_a_drain_whose_collector_never_reported_leaves_the_queue_as_last_read(
    tmp_path: Path,
) -> None:
    """Its record (nothing queued, nothing sent: the collector did not start) is no reading of
    the queue; a drain that read it empty is."""
    config = helpers.REPO / "tests" / "golden" / "long-job" / "current" / "otlp_http+file.yaml"
    outcomes = {}
    for name, queued in (("not started", {}), ("emptied", {"traces": 0, "metrics": 0, "logs": 0})):
        job_dir = _job(tmp_path / name, [_line(SPANS)], [_line(_queue_reading(NOW, 4096))])
        (job_dir / "otel" / "collector.yaml").write_bytes(config.read_bytes())
        record = {"time": "2023-11-14T22:20:00+00:00", "sent": {}, "queued_bytes": queued}
        (job_dir / "otel" / "drain.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
        traces = next(s for s in _report(job_dir)["signals"] if s["signal"] == "traces")
        outcomes[name] = traces["backend"]["queued_on_disk_bytes"]
    assert outcomes == {"not started": 4096, "emptied": 0}
