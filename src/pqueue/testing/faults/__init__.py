"""Fault injection for backend authors: lost connections, lost replies, restarts, clock jumps.

- :class:`FaultyBroker` wraps any broker and injects, on cue, a connection lost before a
  write (:meth:`~FaultyBroker.lose_before`), a lost reply to a committed write
  (:meth:`~FaultyBroker.lose_reply`), a connection lost after a write
  (:meth:`~FaultyBroker.lose_after`), a restart (:meth:`~FaultyBroker.restart`) and a
  clock step either way (:meth:`~FaultyBroker.jump`).
- :class:`FaultContract` is what a backend must guarantee under them; run it as you run
  :mod:`pqueue.testing.contract` (docs/testing.md, "For backend authors").
"""

from pqueue.testing.faults.broker import Fault, FaultyBroker, InjectedFault
from pqueue.testing.faults.contract import FaultContract

__all__ = ["Fault", "FaultContract", "FaultyBroker", "InjectedFault"]
