"""The fleet benchmark's pure parts: the backend's capacity, the numbered items and their tally,
and the figures read from the time series (``benchmarks/fleet.py`` runs them on real
collectors; ``tests/e2e/test_fleet.py`` runs a short fleet)."""

from __future__ import annotations

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from benchmarks._fleet_backend import Event, TokenBucket
from benchmarks._fleet_figures import (
    accepted_by,
    drained_at,
    first_after,
    peak_to_mean,
    window_spread,
)
from benchmarks._fleet_items import (
    Tally,
    add_range,
    all_items,
    item_numbers,
    numbered_body,
    templates,
)
from benchmarks._fleet_network import job_address

MESSAGES = {
    "traces": ExportTraceServiceRequest,
    "logs": ExportLogsServiceRequest,
    "metrics": ExportMetricsServiceRequest,
}


def test_the_bucket_admits_while_it_holds_a_token_and_then_asks_for_the_debts_seconds() -> None:
    bucket = TokenBucket(1_000, now=0.0)  # starts full: one second of capacity
    assert bucket.retry_after(0.0) is None
    bucket.charge(8_192)  # a request larger than the bucket is admitted, into debt
    assert bucket.retry_after(0.0) == 8  # 7,192 items of debt at 1,000/s: 7.2 s, rounded up
    assert bucket.retry_after(7.0) == 1  # 192 items left: under a second, still at least 1
    assert bucket.retry_after(7.3) is None
    assert bucket.retry_after(100.0) is None
    bucket.charge(1_000)  # refilled to one second, not to the 93 s that passed
    assert bucket.retry_after(100.0) == 1


def test_a_lower_capacity_keeps_the_debt_and_caps_the_tokens() -> None:
    bucket = TokenBucket(1_000, now=0.0)
    bucket.set_capacity(100, now=0.0)
    assert bucket.tokens == 100
    bucket.charge(600)
    assert bucket.retry_after(0.0) == 5


@pytest.mark.parametrize("signal", ["traces", "logs", "metrics"])
@pytest.mark.parametrize("count", [1, 17, 512])
def test_a_numbered_body_holds_count_items_numbered_from_first(signal: str, count: int) -> None:
    template = templates(3)[signal]
    message = MESSAGES[signal]()
    message.ParseFromString(numbered_body(signal, template, 1_000, count))
    assert item_numbers(signal, message) == list(range(1_000, 1_000 + count))
    assert all_items(signal, message) == count
    assert all_items(signal, template) == 512  # the template is left whole


def test_a_body_of_no_items_or_more_than_a_batch_is_refused() -> None:
    template = templates(0)["traces"]
    for count in (0, 513):
        with pytest.raises(ValueError, match="count must be 1 to 512"):
            numbered_body("traces", template, 1, count)


def test_ranges_sent_in_order_merge() -> None:
    ranges: list[list[int]] = []
    add_range(ranges, 1, 5)
    add_range(ranges, 5, 9)
    add_range(ranges, 12, 13)  # 9-11 were refused
    assert ranges == [[1, 9], [12, 13]]


def test_the_tally_tells_lost_twice_and_arrived_though_refused() -> None:
    tally = Tally()
    assert tally.add(0, "traces", [1, 2, 3]) == 0
    assert tally.add(0, "traces", [3, 4]) == 1  # 3 again
    assert tally.add(1, "logs", [7]) == 0
    accepted = {(0, "traces"): [[1, 4], [5, 7]], (1, "logs"): [[7, 8]], (2, "metrics"): [[1, 3]]}
    # 5, 6 of job 0 and 1, 2 of job 2 never came; 4 came though it was not accepted.
    assert tally.compare(accepted) == {"lost": 4, "twice": 1, "unasked": 1}
    assert tally.unique() == 5


def test_a_number_beyond_the_tallys_room_grows_it() -> None:
    tally = Tally()
    tally.add(0, "traces", [200_000])
    assert tally.compare({(0, "traces"): [[200_000, 200_001]]})["lost"] == 0


def test_the_backlog_is_drained_once_the_backend_holds_what_was_accepted_lag_earlier() -> None:
    progress = [(10.0, 100), (11.0, 200), (12.0, 300), (13.0, 400)]
    assert accepted_by(progress, 9.9) == 0
    assert accepted_by(progress, 11.5) == 200
    delivered = [(12.0, 50), (13.0, 150), (14.0, 350), (15.0, 400)]
    assert drained_at(progress, delivered, since=12.0, lag=2.0) == 14.0  # 300 accepted by 12.0
    assert drained_at(progress, delivered, since=12.0, lag=0.0) == 15.0
    assert drained_at(progress, delivered[:3], since=12.0, lag=0.0) is None
    assert drained_at(progress, delivered, since=15.5, lag=0.0) is None  # only from ``since``


def test_retries_in_lockstep_fill_one_second_and_spread_ones_do_not() -> None:
    assert window_spread([5.0, 5.1, 5.2, 5.9]) == 4
    assert window_spread([0.0, 2.0, 4.0, 6.0]) == 1
    assert window_spread([]) == 0
    assert peak_to_mean([0.5, 1.5, 2.5, 3.5], 0.0, 4.0) == 1.0
    assert peak_to_mean([0.1, 0.2, 0.3, 0.4], 0.0, 4.0) == 4.0


def test_each_jobs_first_request_after_a_moment() -> None:
    events = [
        Event(9.0, 0, "traces", 503, 0),
        Event(10.5, 1, "traces", 200, 5),
        Event(11.0, 0, "logs", 429, 0),
        Event(12.0, 1, "logs", 200, 5),
        Event(12.5, None, "logs", 200, 5),  # no job's token
    ]
    assert first_after(events, 10.0, jobs=3) == [0.5, 1.0]


def test_job_addresses_are_distinct_and_beside_the_hub() -> None:
    addresses = {job_address(i) for i in range(1_000)}
    assert len(addresses) == 1_000
    assert "10.77.0.1" not in addresses
    with pytest.raises(ValueError):
        job_address(-1)
