"""Test helpers for pqueue users and backend authors.

For testing your handlers (docs/testing.md):

- :func:`run_until_empty` / :func:`run_until_empty_async`: run every due job to its end
  through the worker's own code, and get back what ran and how it ended
  (:class:`BurstResult`).
- :func:`assert_enqueued` / :func:`assert_enqueued_async` / :func:`assert_not_enqueued`
  and :func:`enqueued`: what was enqueued, with a failure message that lists it.
- ``pqueue.testing.plugin``: pytest fixtures ``pqueue_client``, ``pqueue_async_client``
  and ``pqueue_memory_dsn`` (a memory store per test).
- :class:`~pqueue.clock.ManualClock`: inject into a client or broker and move time by hand.

For backend authors:

- ``pqueue.testing.contract``: the behavioural contract every backend must pass. An
  out-of-tree backend runs it by subclassing the classes in
  :data:`pqueue.testing.contract.ALL_CONTRACTS` in its own test module.
- ``pqueue.testing.faults``: lost connections, lost replies, restarts and clock jumps
  injected at the broker seam, and :class:`~pqueue.testing.faults.FaultContract`, which
  every backend must pass under them.
"""

from pqueue.clock import ManualClock
from pqueue.middleware import JobReport, Outcome
from pqueue.testing.asserts import (
    ANY,
    assert_enqueued,
    assert_enqueued_async,
    assert_not_enqueued,
    enqueued,
    enqueued_async,
)
from pqueue.testing.burst import BurstResult, run_until_empty, run_until_empty_async

__all__ = [
    "ANY",
    "BurstResult",
    "JobReport",
    "ManualClock",
    "Outcome",
    "assert_enqueued",
    "assert_enqueued_async",
    "assert_not_enqueued",
    "enqueued",
    "enqueued_async",
    "run_until_empty",
    "run_until_empty_async",
]
