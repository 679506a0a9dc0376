"""The combiner: concurrent enqueues share round trips, each caller gets its own outcome."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Sequence

from pqueue.combine import AsyncCombiner, Combiner, merging, merging_async
from pqueue.errors import BrokerError, BrokerUnavailable
from pqueue.job import EnqueueResult, JobSpec
from pqueue.spec import build_spec


def spec(payload: object) -> JobSpec:
    return build_spec("t", payload)


def _p(s: JobSpec) -> object:
    return json.loads(s.payload_json)


def ok(s: JobSpec) -> list[EnqueueResult]:
    return [EnqueueResult(s.id, True)]


class FakeBroker:
    """Records each round trip's payloads. A spec with payload "bad" fails the whole call
    it is in, as a failing statement fails its transaction; "down" fails it as an
    unreachable server. With ``hold``, the first round trip waits until released."""

    def __init__(self, *, hold: bool = False) -> None:
        self.sends: list[list[object]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        if not hold:
            self.release.set()

    def check(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        self.sends.append([_p(s) for s in specs])
        if len(self.sends) == 1:
            self.entered.set()
            assert self.release.wait(10)
        if any(_p(s) == "down" for s in specs):
            raise BrokerUnavailable("Redis at x:1 is unreachable: connection refused")
        if any(_p(s) == "bad" for s in specs):
            raise BrokerError("Postgres error: bad job")
        return [EnqueueResult(s.id, True) for s in specs]

    def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        return self.check(specs)


def wait_until(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def run_threads(combiner: Combiner, broker: FakeBroker, payloads: list[object]) -> dict[int, object]:
    """The first payload's call is held in flight while the others arrive; then all finish."""
    specs = [spec(p) for p in payloads]
    outcomes: dict[int, object] = {}

    def call(i: int) -> None:
        try:
            outcomes[i] = combiner.submit([specs[i]])
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            outcomes[i] = exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(specs))]
    threads[0].start()
    assert broker.entered.wait(10)
    for thread in threads[1:]:
        thread.start()
    wait_until(lambda: len(combiner._line.waiting) == len(specs) - 1)
    broker.release.set()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    return {i: (o if isinstance(o, Exception) else o == ok(specs[i])) for i, o in outcomes.items()}


def test_a_lone_caller_sends_at_once_and_alone() -> None:
    broker = FakeBroker()
    combiner = Combiner(merging(broker.enqueue))
    for i in range(5):
        s = spec(i)
        assert combiner.submit([s]) == ok(s)
    assert broker.sends == [[0], [1], [2], [3], [4]]  # one round trip per call, none held back


def test_threads_arriving_during_a_round_trip_share_the_next_one() -> None:
    broker = FakeBroker(hold=True)
    outcomes = run_threads(Combiner(merging(broker.enqueue)), broker, list(range(16)))
    assert outcomes == dict.fromkeys(range(16), True)  # each thread got its own result
    assert broker.sends[0] == [0]
    assert sorted(broker.sends[1]) == list(range(1, 16)) and len(broker.sends) == 2


def test_a_bad_job_fails_alone() -> None:
    broker = FakeBroker(hold=True)
    outcomes = run_threads(Combiner(merging(broker.enqueue)), broker, [0, 1, 2, "bad", 4, 5])
    assert isinstance(outcomes.pop(3), BrokerError)
    assert outcomes == dict.fromkeys([0, 1, 2, 4, 5], True)
    # the merged round trip failed, then each request went alone: only the bad one failed
    assert sorted(map(str, broker.sends[1])) == ["1", "2", "4", "5", "bad"]
    assert sorted(str(p) for [p] in broker.sends[2:]) == ["1", "2", "4", "5", "bad"]


def test_an_unreachable_server_fails_the_round_trip_without_retrying_each() -> None:
    broker = FakeBroker(hold=True)
    outcomes = run_threads(Combiner(merging(broker.enqueue)), broker, [0, 1, "down", 3])
    assert outcomes[0] is True
    assert all(isinstance(outcomes[i], BrokerUnavailable) for i in (1, 2, 3))
    assert len(broker.sends) == 2


class AsyncFake:
    """An async broker enqueue that holds its first round trip until ``gate`` is set and
    fails any call holding a "bad" payload; ``sends`` records each call's payloads."""

    def __init__(self) -> None:
        self.sends: list[list[object]] = []
        self.gate = asyncio.Event()

    async def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        self.sends.append([_p(s) for s in specs])
        if len(self.sends) == 1:
            await self.gate.wait()
        if any(_p(s) == "bad" for s in specs):
            raise BrokerError("Postgres error: bad job")
        return [EnqueueResult(s.id, True) for s in specs]

    def combiner(self) -> AsyncCombiner:
        return AsyncCombiner(lambda requests: merging_async(self.enqueue, requests))


async def test_coroutines_share_round_trips_and_get_their_own_outcomes() -> None:
    fake = AsyncFake()
    sends, gate = fake.sends, fake.gate
    combiner = fake.combiner()
    specs = [spec(p) for p in [0, 1, 2, "bad", 4]]
    first = asyncio.create_task(combiner.submit([specs[0]]))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert sends == [[0]]  # sent at once
    rest = [asyncio.create_task(combiner.submit([s])) for s in specs[1:]]
    await asyncio.sleep(0)
    gate.set()
    outcomes = await asyncio.gather(first, *rest, return_exceptions=True)
    assert isinstance(outcomes[3], BrokerError)
    assert [o for i, o in enumerate(outcomes) if i != 3] == [ok(s) for i, s in enumerate(specs) if i != 3]
    assert sends[1] == [1, 2, "bad", 4]  # the late-comers' one round trip, then each alone
    assert sends[2:] == [[1], [2], ["bad"], [4]]


async def test_a_cancelled_waiter_is_not_sent_and_does_not_stall_the_line() -> None:
    fake = AsyncFake()
    sends, gate = fake.sends, fake.gate
    combiner = fake.combiner()
    first = asyncio.create_task(combiner.submit([spec(0)]))
    await asyncio.sleep(0)
    waiting = [asyncio.create_task(combiner.submit([spec(i)])) for i in (1, 2)]
    await asyncio.sleep(0)
    waiting[0].cancel()
    await asyncio.sleep(0)
    gate.set()
    assert (await first)[0].created
    assert (await waiting[1])[0].created
    assert waiting[0].cancelled()
    assert sends == [[0], [2]]
    assert (await combiner.submit([spec(3)]))[0].created  # the line is free again
