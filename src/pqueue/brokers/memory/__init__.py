"""The in-memory reference backend (``memory://``)."""

from pqueue.brokers.memory.broker import MemoryBroker, drop_store

__all__ = ["MemoryBroker", "drop_store"]
