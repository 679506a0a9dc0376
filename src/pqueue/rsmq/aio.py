"""``AsyncRsmq``: the asyncio RSMQ client, the same operations as :class:`~pqueue.rsmq.Rsmq`
(:mod:`pqueue.rsmq.core`) driven awaited (an async context manager)."""

from __future__ import annotations

from types import TracebackType

from pqueue.rsmq import core
from pqueue.rsmq.dsn import resolve
from pqueue.rsmq.keys import Keys
from pqueue.rsmq.model import QueueAttributes, RsmqMessage
from pqueue.rsmq.transport import AsyncTransport
from pqueue.steps import run_async


class AsyncRsmq:
    """An asyncio RSMQ client on ``dsn``; see :class:`~pqueue.rsmq.Rsmq` for each method."""

    def __init__(self, dsn: str, *, ns: str | None = None, realtime: bool = False) -> None:
        url, namespace = resolve(dsn, ns)
        self.keys = Keys(namespace)
        self.realtime = realtime
        self.transport = AsyncTransport(url)
        self._io = self.transport

    async def __aenter__(self) -> AsyncRsmq:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        await self._io.close()

    async def create_queue(self, qname: str, *, vt: int = 30, delay: int = 0, maxsize: int = 65536) -> None:
        await run_async(core.create_queue(self.keys, qname, vt, delay, maxsize), self._io)

    async def list_queues(self) -> list[str]:
        return await run_async(core.list_queues(self.keys), self._io)

    async def delete_queue(self, qname: str) -> None:
        await run_async(core.delete_queue(self.keys, qname), self._io)

    async def get_queue_attributes(self, qname: str) -> QueueAttributes:
        return await run_async(core.get_queue_attributes(self.keys, qname), self._io)

    async def set_queue_attributes(
        self, qname: str, *, vt: int | None = None, delay: int | None = None, maxsize: int | None = None
    ) -> QueueAttributes:
        op = core.set_queue_attributes(self.keys, qname, vt, delay, maxsize)
        return await run_async(op, self._io)

    async def send_message(self, qname: str, message: str, *, delay: int | None = None) -> str:
        op = core.send_message(self.keys, qname, message, delay, self.realtime)
        return await run_async(op, self._io)

    async def receive_message(self, qname: str, *, vt: int | None = None) -> RsmqMessage | None:
        return await run_async(core.receive_message(self.keys, qname, vt), self._io)

    async def pop_message(self, qname: str) -> RsmqMessage | None:
        return await run_async(core.pop_message(self.keys, qname), self._io)

    async def delete_message(self, qname: str, id: str) -> bool:
        return await run_async(core.delete_message(self.keys, qname, id), self._io)

    async def change_message_visibility(self, qname: str, id: str, vt: int) -> bool:
        op = core.change_message_visibility(self.keys, qname, id, vt)
        return await run_async(op, self._io)

    async def list_messages(self, qname: str, *, limit: int = 20) -> list[RsmqMessage]:
        return await run_async(core.list_messages(self.keys, qname, limit), self._io)

    async def requeue_dead(self, qname: str, *, limit: int = 100) -> int:
        return await run_async(core.requeue(self.keys, core.dead_queue(qname), qname, limit), self._io)

    async def settle(self, qname: str, message: RsmqMessage, action: str, hide_ms: int = 0) -> bool:
        """The consumer's fenced delete / hide / bury (``lua/settle.lua``)."""
        op = core.settle(self.keys, qname, message, action, hide_ms)
        return await run_async(op, self._io)
