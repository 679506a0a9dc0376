"""Test helpers for pqueue users and backend authors.

- :class:`~pqueue.clock.ManualClock`: inject into a broker and move time by hand.
- ``pqueue.testing.plugin``: pytest fixtures ``clock``, ``broker`` and ``open_broker``,
  built on a ``pqueue_open_broker`` fixture you provide.
- ``pqueue.testing.contract``: the behavioural contract every backend must pass. An
  out-of-tree backend runs it by subclassing the classes in
  :data:`pqueue.testing.contract.ALL_CONTRACTS` in its own test module.
"""

from pqueue.clock import ManualClock

__all__ = ["ManualClock"]
