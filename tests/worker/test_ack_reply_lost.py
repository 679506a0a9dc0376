"""An ack whose reply was lost is not a lost lease: the settler asks the broker.

When the connection dies after the server applied an ack but before its reply came
back, the ack is sent again and refused (the job is completed already). The settler
then looks the job up: completed in the run its lease started means the first send
landed (completed, nothing lost); recovered and completed by another claim means the
lease really was lost. Once per backend.
"""

from __future__ import annotations

from typing import Any

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.errors import BrokerUnavailable
from pqueue.job import Lease
from pqueue.middleware import MiddlewareChain
from pqueue.testing.contract.helpers import put, take_one
from pqueue.worker.leases import LeaseBook
from pqueue.worker.settle import Settler, WorkerCounters


class ReplyLostOnce:
    """The broker, but the first ack is applied and then fails as if its reply was lost."""

    def __init__(self, broker: FullBroker) -> None:
        self._broker = broker
        self.acks = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._broker, name)

    async def ack(self, leases: list[Lease], results_json: Any = None) -> list[bool]:
        self.acks += 1
        oks = await self._broker.ack(leases, results_json)
        if self.acks == 1:
            raise BrokerUnavailable("Redis at 127.0.0.1:1 is unreachable: connection reset")
        return oks


async def _settle(broker: FullBroker, lease: Lease) -> WorkerCounters:
    counters = WorkerCounters()
    book = LeaseBook()
    book.add([lease])
    settler = Settler(ReplyLostOnce(broker), book, MiddlewareChain(), counters)  # type: ignore[arg-type]
    settler.start()
    settler.complete(lease, None, 0.01)
    await settler.close()
    return counters


async def test_an_ack_applied_before_its_reply_was_lost_counts_as_completed(broker: FullBroker) -> None:
    await put(broker)
    counters = await _settle(broker, await take_one(broker))
    assert (counters.completed, counters.lost) == (1, 0)


async def test_an_ack_refused_because_the_job_ran_elsewhere_is_lost(
    broker: FullBroker, clock: ManualClock
) -> None:
    await put(broker, max_retries=5)
    zombie = await take_one(broker, worker="w1")
    clock.advance(31)
    await broker.recover()
    fresh = await take_one(broker, worker="w2")
    assert await broker.ack([fresh]) == [True]  # completed, by the other claim
    counters = await _settle(broker, zombie)
    assert (counters.completed, counters.lost) == (0, 1)
