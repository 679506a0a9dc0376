"""RSMQ, the Redis Simple Message Queue, wire-compatible with every RSMQ client.

:class:`Rsmq` (blocking) and :class:`AsyncRsmq` (asyncio) read and write the layout of
the reference Node client (``rsmq`` on npm), so Node, PHP, Go, Java, Rust and Python
programs share queues; :class:`Consumer` is the worker runtime RSMQ never had
(heartbeats, delete on success, back-off, a dead queue, graceful drain).
See docs/rsmq.md and ADR 0144.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pqueue.rsmq.errors import InvalidArgument, MessageTooLong, QueueExists, QueueNotFound, RsmqError
from pqueue.rsmq.model import QueueAttributes, RsmqMessage

if TYPE_CHECKING:
    from pqueue.rsmq.aio import AsyncRsmq
    from pqueue.rsmq.client import Rsmq
    from pqueue.rsmq.consumer import Consumer

_LAZY = {"Rsmq": "client", "AsyncRsmq": "aio", "Consumer": "consumer"}


def __getattr__(name: str) -> Any:
    """The clients import redis-py: only when asked for, so the errors need no extra."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"pqueue.rsmq.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'pqueue.rsmq' has no attribute {name!r}")


__all__ = [
    "Rsmq",
    "AsyncRsmq",
    "Consumer",
    "RsmqMessage",
    "QueueAttributes",
    "RsmqError",
    "QueueNotFound",
    "QueueExists",
    "MessageTooLong",
    "InvalidArgument",
]
