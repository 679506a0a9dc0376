"""``Rsmq``: the blocking RSMQ client (a context manager).

Each method is one operation of :mod:`pqueue.rsmq.core` driven by
:func:`pqueue.steps.run_sync` over a redis-py client; :class:`~pqueue.rsmq.AsyncRsmq`
drives the same operations awaited. Names are RSMQ's in snake_case, options keywords.
"""

from __future__ import annotations

from types import TracebackType

from pqueue.rsmq import core
from pqueue.rsmq.dsn import resolve
from pqueue.rsmq.keys import Keys
from pqueue.rsmq.model import QueueAttributes, RsmqMessage
from pqueue.rsmq.transport import SyncTransport
from pqueue.steps import run_sync


class Rsmq:
    """An RSMQ client on ``dsn`` (``redis://host:6379/0``): the keys of namespace ``ns``
    (default: the DSN's ``?prefix=``, else ``rsmq``), shared with every RSMQ client in any
    language. With ``realtime``, each send publishes the queue's message count on
    ``{ns}:rt:{qname}`` (as the reference client does)."""

    def __init__(self, dsn: str, *, ns: str | None = None, realtime: bool = False) -> None:
        url, namespace = resolve(dsn, ns)
        self.keys = Keys(namespace)
        self.realtime = realtime
        self._io = SyncTransport(url)

    def __enter__(self) -> Rsmq:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._io.close()

    def create_queue(self, qname: str, *, vt: int = 30, delay: int = 0, maxsize: int = 65536) -> None:
        """Make a queue; :class:`~pqueue.rsmq.QueueExists` if it exists."""
        run_sync(core.create_queue(self.keys, qname, vt, delay, maxsize), self._io)

    def list_queues(self) -> list[str]:
        """The names of every queue of the namespace, sorted."""
        return run_sync(core.list_queues(self.keys), self._io)

    def delete_queue(self, qname: str) -> None:
        """Delete a queue and its messages; :class:`~pqueue.rsmq.QueueNotFound` if none."""
        run_sync(core.delete_queue(self.keys, qname), self._io)

    def get_queue_attributes(self, qname: str) -> QueueAttributes:
        """The queue's settings, totals and counts."""
        return run_sync(core.get_queue_attributes(self.keys, qname), self._io)

    def set_queue_attributes(
        self, qname: str, *, vt: int | None = None, delay: int | None = None, maxsize: int | None = None
    ) -> QueueAttributes:
        """Change any of vt, delay, maxsize (at least one); returns the new attributes."""
        op = core.set_queue_attributes(self.keys, qname, vt, delay, maxsize)
        return run_sync(op, self._io)

    def send_message(self, qname: str, message: str, *, delay: int | None = None) -> str:
        """Send ``message`` (a ``str``), visible after ``delay`` seconds (default: the
        queue's); returns its id."""
        op = core.send_message(self.keys, qname, message, delay, self.realtime)
        return run_sync(op, self._io)

    def receive_message(self, qname: str, *, vt: int | None = None) -> RsmqMessage | None:
        """The next visible message, hidden for ``vt`` seconds (default: the queue's), or None."""
        return run_sync(core.receive_message(self.keys, qname, vt), self._io)

    def pop_message(self, qname: str) -> RsmqMessage | None:
        """The next visible message, deleted as it is received, or None."""
        return run_sync(core.pop_message(self.keys, qname), self._io)

    def delete_message(self, qname: str, id: str) -> bool:
        """Delete a message; False if there was none with this id."""
        return run_sync(core.delete_message(self.keys, qname, id), self._io)

    def change_message_visibility(self, qname: str, id: str, vt: int) -> bool:
        """Make a message visible ``vt`` seconds from now; False if there is none with this id."""
        op = core.change_message_visibility(self.keys, qname, id, vt)
        return run_sync(op, self._io)

    def list_messages(self, qname: str, *, limit: int = 20) -> list[RsmqMessage]:
        """pqueue's addition: the first ``limit`` messages by visible-at time, read-only
        (nothing is received or counted); ``rc`` and ``fr`` are 0 for a message never received."""
        return run_sync(core.list_messages(self.keys, qname, limit), self._io)

    def requeue_dead(self, qname: str, *, limit: int = 100) -> int:
        """pqueue's addition: move up to ``limit`` messages of the consumer's dead queue
        ``{qname}-dead`` back to ``qname``, visible now with a fresh rc; returns how many."""
        return run_sync(core.requeue(self.keys, core.dead_queue(qname), qname, limit), self._io)
