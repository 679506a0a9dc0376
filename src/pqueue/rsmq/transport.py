"""The I/O under the RSMQ operations: one request to Redis, blocking or awaited.

Both transports send a :class:`~pqueue.rsmq.core.Script` by ``EVALSHA`` (``EVAL`` after a
``NOSCRIPT``, which also caches it again) and a :class:`~pqueue.rsmq.core.Command` as it
is, and translate driver errors the same way (:meth:`Link.translate`): an unreachable
server is :class:`~pqueue.errors.BrokerUnreachable`, logged once per outage by the
process's :class:`~pqueue.brokers.health.ServerHealth` of that server, as pqueue's
brokers do; any other refusal is an :class:`~pqueue.rsmq.RsmqError`. As for a broker's
failed ``open``, a client that never reached the server logs no outage: it lost
nothing, and its error says why (``pqueue rsmq queues`` against a dead Redis prints only
the failure).
"""

from __future__ import annotations

import logging
from typing import Any

from redis import BlockingConnectionPool, Redis
from redis.asyncio import BlockingConnectionPool as AsyncBlockingConnectionPool
from redis.asyncio import Redis as AsyncRedis
from redis.exceptions import NoScriptError, RedisError

from pqueue.brokers import redact
from pqueue.brokers.health import describe, failure_message, health_of
from pqueue.brokers.redis import eviction
from pqueue.brokers.redis.core import OutageReporter, address, unreachable
from pqueue.errors import BrokerUnreachable, ConfigError, PQueueError
from pqueue.rsmq import scripts
from pqueue.rsmq.core import Command, Request
from pqueue.rsmq.errors import RsmqError
from pqueue.rsmq.rounds import Rounds

log = logging.getLogger("pqueue.rsmq")

CLIENT_OPTIONS: dict[str, Any] = {"decode_responses": True, "encoding_errors": "surrogateescape"}
"""Replies as ``str``; a body that is not UTF-8 (another client's bytes) survives as
surrogate escapes and is written back byte for byte (ADR 0144)."""

POOL_SIZE = 64
"""Connections a client opens at most; more concurrent calls wait for one (a blocking
pool: redis-py's plain pool raises "Too many connections" instead)."""


def _pool(kind: Any, dsn: str) -> Any:
    try:
        return kind.from_url(dsn, max_connections=POOL_SIZE, timeout=None, **CLIENT_OPTIONS)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"invalid Redis URL {redact(dsn)!r}: {exc}") from None


def _args(request: Request, *, by_sha: bool) -> tuple[Any, ...]:
    """The command that sends ``request`` (a script by ``EVALSHA``, or ``EVAL`` after ``NOSCRIPT``)."""
    if isinstance(request, Command):
        return request.args
    source = scripts.source(request.name)
    head = ("EVALSHA", source.sha) if by_sha else ("EVAL", source.text)
    return (*head, len(request.keys), *request.keys, *request.args)


class Link:
    """What both transports share: the server's address and health, and error translation."""

    def __init__(self, dsn: str) -> None:
        self.address = address(dsn)
        self.health = health_of(f"Redis at {self.address}")
        self._reporter = OutageReporter(self.health)  # armed by the server's first answer

    def answered(self) -> None:
        """A request went through: end an outage, and report the next one."""
        self.health.ok()
        self._reporter.armed = True

    def translate(self, exc: RedisError | OSError) -> PQueueError:
        """The pqueue error for a driver error (no driver traceback for an outage)."""
        if unreachable(exc):
            cause = describe(exc)
            self._reporter.lost(exc)
            log.debug("redis at %s: %s", self.address, exc, exc_info=exc)
            return BrokerUnreachable(
                failure_message(f"Redis at {self.address}", cause), address=self.address, cause=cause
            )
        return RsmqError(f"redis command failed: {exc}")


class SyncTransport(Link):
    """Blocking requests on a redis-py client (its own connection pool)."""

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.client: Redis = Redis(connection_pool=_pool(BlockingConnectionPool, dsn))

    def __call__(self, request: Request) -> Any:
        try:
            try:
                reply = self.client.execute_command(*_args(request, by_sha=True))  # type: ignore[no-untyped-call]
            except NoScriptError:
                reply = self.client.execute_command(*_args(request, by_sha=False))  # type: ignore[no-untyped-call]
        except (RedisError, OSError) as exc:
            raise self.translate(exc) from None
        self.answered()
        return reply

    def close(self) -> None:
        self.client.close()
        self.client.connection_pool.disconnect()


class AsyncTransport(Link):
    """Awaited requests on a redis-py asyncio client; concurrent callers share round trips
    (:mod:`pqueue.rsmq.rounds`: one pipeline carries every request that arrived together)."""

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.client: AsyncRedis = AsyncRedis(connection_pool=_pool(AsyncBlockingConnectionPool, dsn))
        self._rounds = Rounds(self._send)

    async def __call__(self, request: Request) -> Any:
        return await self._rounds.submit(request)

    async def _send(self, requests: list[Request]) -> list[Any]:
        """One round trip for ``requests``: a reply or a pqueue error for each."""
        try:
            if len(requests) == 1:
                replies: list[Any] = [await self._one(requests[0])]
            else:
                pipe = self.client.pipeline(transaction=False)
                for request in requests:
                    pipe.execute_command(*_args(request, by_sha=True))
                replies = await pipe.execute(raise_on_error=False)
                for i, reply in enumerate(replies):
                    if isinstance(reply, NoScriptError):  # loaded again by EVAL, alone
                        replies[i] = await self._one(requests[i])
        except (RedisError, OSError) as exc:
            raise self.translate(exc) from None
        self.answered()
        return [self.translate(r) if isinstance(r, RedisError | OSError) else r for r in replies]

    async def _one(self, request: Request) -> Any:
        try:
            return await self.client.execute_command(*_args(request, by_sha=True))  # type: ignore[no-untyped-call]
        except NoScriptError:
            return await self.client.execute_command(*_args(request, by_sha=False))  # type: ignore[no-untyped-call]

    async def warn_if_evicting(self) -> None:
        """Log one WARNING per process if Redis's ``maxmemory-policy`` may evict keys
        (messages): the Redis broker's check (ADR 0159)."""
        await eviction.warn_once(self.client, self.health.name)

    async def close(self) -> None:
        await self.client.aclose()
        await self.client.connection_pool.disconnect()
