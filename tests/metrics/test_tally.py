"""The running tallies reach the same exposition as prometheus-client's own calls."""

from __future__ import annotations

import math
import threading

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from pqueue.metrics import BUCKETS
from pqueue.metrics.tally import CountTally, HistogramTally, LevelTally
from tests.metrics.scrape import parse

VALUES = [0.0, 0.0001, 0.0005, 0.0007, 0.003, 0.5, 1.0, 2.5, 42.0, 3600.0, 7200.0]


def _pair() -> tuple[CollectorRegistry, CollectorRegistry]:
    return CollectorRegistry(), CollectorRegistry()


def test_histogram_tally_matches_observe_bucket_for_bucket() -> None:
    ours, theirs = _pair()
    tally = HistogramTally(
        Histogram("h_seconds", "h", ["q"], registry=ours, buckets=BUCKETS).labels("a"), [*BUCKETS, math.inf]
    )
    reference = Histogram("h_seconds", "h", ["q"], registry=theirs, buckets=BUCKETS).labels("a")
    for n, value in enumerate(VALUES):
        tally.observe(value)
        reference.observe(value)
        if n % 3 == 0:
            tally.catch_up()  # catching up in steps adds up to the same
    tally.catch_up()
    tally.catch_up()  # nothing new: no change
    strip = lambda text: {k: v for k, v in parse(text).items() if not k[0].endswith("_created")}  # noqa: E731
    assert strip(generate_latest(ours).decode()) == strip(generate_latest(theirs).decode())


def test_count_and_level_tallies() -> None:
    registry = CollectorRegistry()
    count = CountTally(Counter("c_total", "c", registry=registry))
    level = LevelTally(Gauge("g", "g", registry=registry))
    count.total += 5
    level.started, level.ended = 7, 4
    count.catch_up()
    level.catch_up()
    count.total += 1
    count.catch_up()
    assert registry.get_sample_value("c_total") == 6
    assert registry.get_sample_value("g") == 3


def test_catching_up_from_another_thread_loses_nothing() -> None:
    registry = CollectorRegistry()
    count = CountTally(Counter("c_total", "c", registry=registry))
    stop = threading.Event()

    def scraper() -> None:
        while not stop.is_set():
            count.catch_up()

    thread = threading.Thread(target=scraper)
    thread.start()
    for _ in range(200_000):
        count.total += 1
    stop.set()
    thread.join()
    count.catch_up()
    assert registry.get_sample_value("c_total") == 200_000
