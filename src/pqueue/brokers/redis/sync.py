"""The sync Client's Redis transport: redis-py's blocking client (hiredis) in the caller's thread.

It drives the :class:`~pqueue.brokers.redis.broker.RedisBroker`'s own steps (scripts,
keys, codecs, decoding, error translation); only the round trip is blocking. An
unreachable server raises :class:`~pqueue.transport.Hop`: the asyncio broker then
retries, reports the outage once and raises as it always did (ADR 0120).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from redis import BlockingConnectionPool, Redis, RedisCluster
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from pqueue.brokers.redis import cluster
from pqueue.brokers.redis.core import RETRY_CAP, unreachable
from pqueue.brokers.redis.scripts import Command
from pqueue.combine import Outcome, Request
from pqueue.job import EnqueueResult, JobSpec
from pqueue.steps import Steps, run_sync
from pqueue.transport import Hop, StepsTransport

if TYPE_CHECKING:
    from pqueue.brokers.redis.broker import RedisBroker

T = TypeVar("T")
Send = Callable[[list[Command]], list[Any]]


class RedisSyncTransport(StepsTransport[list[Command], list[Any]]):
    """Blocking twins of the broker's producer calls; one per sync Client, shared by its threads."""

    def __init__(self, broker: RedisBroker) -> None:
        super().__init__(broker)
        self.broker = broker
        self._lock = threading.Lock()
        self._client: Redis | RedisCluster | None = None
        self._line: Redis | RedisCluster | None = None

    def _redis(self) -> Redis | RedisCluster:
        if self._client is None:
            with self._lock:
                if self._client is None and self.broker.options.cluster:  # connects here: may hop
                    self._client = cluster.sync_client(
                        self.broker.options, self.broker.pool_options(), backoff_cap=RETRY_CAP
                    )
                if self._client is None:
                    try:
                        pool = BlockingConnectionPool.from_url(
                            self.broker.options.url,
                            max_connections=self.broker.options.pool_size,
                            # One quick retry for a pooled connection the server closed; an
                            # outage is the asyncio broker's to ride out and report.
                            retry=Retry(NoBackoff(), 1),
                            retry_on_error=[RedisConnectionError, RedisTimeoutError],
                            **self.broker.pool_options(),
                        )
                    except (ValueError, TypeError) as exc:
                        raise self.broker.invalid_dsn(exc) from exc
                    self._client = Redis(connection_pool=pool)
        return self._client

    def _line_client(self) -> Redis | RedisCluster:
        """The client of the combiner's round trips: one connection of the pool, kept. The
        combiner sends one round trip at a time, so they need no check-out and check-in
        of a pooled connection per call (a third of redis-py's cost of a call). A cluster's
        client routes by slot over its own per-node connections: it is its own line."""
        line = self._line
        if line is None:
            client = self._redis()
            if isinstance(client, RedisCluster):
                return client
            pool = client.connection_pool
            with self._lock:
                if self._line is None:  # connects here: an unreachable server hops
                    self._line = Redis(connection_pool=pool, single_connection_client=True)
                line = self._line
        return line

    def run(self, steps: Steps[list[Command], list[Any], T]) -> T:
        """Drive one operation's steps here, translating errors as the broker does."""
        return self._run(steps, self._send)

    def _run(self, steps: Steps[list[Command], list[Any], T], send: Send) -> T:
        sent_at = time.monotonic()
        try:
            result = run_sync(steps, send)
        except (RedisError, RedisClusterException, OSError) as exc:
            if unreachable(exc) or cluster.reconfiguring(exc):
                raise Hop(f"{self.broker.server}: {type(exc).__name__}") from exc
            raise self.broker.translate(exc) from exc
        self.broker.health.ok(sent_at)
        return result

    def _send(self, commands: list[Command]) -> list[Any]:
        """One round trip on a pooled connection (the asyncio broker's ``_send``, blocking)."""
        return _round_trip(self._redis(), commands)

    def _send_line(self, commands: list[Command]) -> list[Any]:
        return _round_trip(self._line_client(), commands)

    def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        self._no_replica_wait()
        return super().enqueue(specs)

    def enqueue_each(self, requests: list[Request]) -> list[Outcome]:
        """One pipeline for several callers (``RedisBroker.enqueue_each_steps``), on the
        combiner's own connection."""
        self._no_replica_wait()
        return self._run(self.broker.enqueue_each_steps(requests), self._send_line)

    def _no_replica_wait(self) -> None:
        """With ``wait_replicas``, enqueues go through the asyncio broker, which confirms
        them (pqueue.brokers.redis.replicas): one place for that rule."""
        if self.broker.options.wait_replicas:
            raise Hop(f"{self.broker.server}: wait_replicas confirms enqueues on the loop thread")

    def close(self) -> None:
        line, self._line = self._line, None
        if line is not None:
            line.close()  # its connection back to the pool, which is closed next
        client, self._client = self._client, None
        if isinstance(client, RedisCluster):
            client.close()
        elif client is not None:
            client.close()
            client.connection_pool.disconnect()


def _round_trip(client: Redis | RedisCluster, commands: Sequence[Command]) -> list[Any]:
    """One round trip: a lone command without a pipeline's cost; refusals in place of replies."""
    if isinstance(client, RedisCluster):
        return cluster.send_sync(client, commands)
    if len(commands) == 1:
        execute: Callable[..., Any] = client.execute_command
        try:
            return [execute(*commands[0])]
        except ResponseError as exc:
            return [exc]
    pipe = client.pipeline(transaction=False)
    queue: Callable[..., Any] = pipe.execute_command
    for command in commands:
        queue(*command)
    return list(pipe.execute(raise_on_error=False))
