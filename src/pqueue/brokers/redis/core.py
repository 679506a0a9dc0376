"""What every part of the Redis broker shares: options, the client, time, error translation."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from pqueue.brokers import redact
from pqueue.brokers.health import TLS_MISMATCH, ServerHealth, describe, failure_message, health_of
from pqueue.brokers.hub import Hub
from pqueue.brokers.redis import cluster, replicas, scripts
from pqueue.brokers.redis.codec import to_ms
from pqueue.brokers.redis.config import RedisOptions
from pqueue.brokers.redis.keys import GlobalKeys, Lanes, QueueKeys, global_keys, lane_keys, lanes, queue_keys
from pqueue.brokers.redis.tls import answers_plain_redis, may_be_plain_port, tls_target
from pqueue.clock import Clock
from pqueue.errors import BrokerError, BrokerUnreachable, ConfigError, PQueueError, SchemaError
from pqueue.steps import Steps, run_async

log = logging.getLogger("pqueue.redis")

LAYOUT_VERSION = "1"
"""Version of the key layout in docs/redis.md; ``open`` refuses any other."""

RETRY_CAP = 0.25
"""Longest wait between redis-py's reconnect attempts: a command waiting out an outage goes
through within this long of the server being back (a doubling backoff up to 2 s made
resumes take seconds). ``retries`` attempts still bound how long it waits in all."""

CONNECT_TIMEOUT = 2.0
"""Seconds a connection attempt (TCP and TLS handshake) may take: a black-holed host or a
TLS client talking to a plain port fails with ``timeout`` instead of hanging."""

AnyRedis = Redis | RedisCluster
"""One server's client or a cluster's (``redis+cluster://``, ADR 0143)."""

P = ParamSpec("P")
R = TypeVar("R")


def honour_lost_cancel(task: asyncio.Task[Any] | None, cancels_before: int) -> None:
    """Raise CancelledError if ``task`` was cancelled during a call that then returned anyway.

    redis-py 8 sends every command through ``asyncio.wait_for``, which on Python 3.11
    returns normally when a cancellation races with the send completing; the caller's
    cancel would be lost and, e.g., a worker's shutdown would hang on a task that keeps
    running. The cancel request is still counted by ``Task.cancelling()``, so it can be
    honoured here, after the command, with the connection in a clean state.
    """
    if task is not None and task.cancelling() > cancels_before:
        raise asyncio.CancelledError()


def translated(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Turn redis-py errors into pqueue's (unreachable -> BrokerUnreachable naming the cause
    and host:port, else BrokerError), report the server's reachability to its
    :class:`~pqueue.brokers.health.ServerHealth`, and never let a cancellation go missing.
    Decorates methods of :class:`RedisCore` and its subclasses (``args[0]``)."""
    return _translating(fn, keyless=False)


def translated_keyless(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """:func:`translated` for a method that sends only keyless commands (``TIME``): on a
    cluster such a command goes to any node, so its reply does not end an outage of the
    node that serves a queue's slot (a worker would log 'back' and then 'lost' again)."""
    return _translating(fn, keyless=True)


def _translating(fn: Callable[P, Awaitable[R]], *, keyless: bool) -> Callable[P, Awaitable[R]]:
    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        core: RedisCore = args[0]  # type: ignore[assignment]
        task = asyncio.current_task()
        cancels = task.cancelling() if task is not None else 0
        sent_at = time.monotonic()
        try:
            result = await fn(*args, **kwargs)
        except PQueueError:
            honour_lost_cancel(task, cancels)
            raise
        except (RedisError, RedisClusterException, OSError) as exc:
            honour_lost_cancel(task, cancels)
            raise core.translate(exc) from (None if unreachable(exc) or cluster.reconfiguring(exc) else exc)
        except RuntimeError as exc:
            if not closed_transport(exc):
                raise
            honour_lost_cancel(task, cancels)
            raise core.translate(RedisConnectionError("Connection closed by server.")) from None
        honour_lost_cancel(task, cancels)
        if not (keyless and core.options.cluster):
            core.health.ok(sent_at)
        return result

    return wrapper


def unreachable(exc: BaseException) -> bool:
    """Whether a driver error means the server could not be reached (vs. a refused command)."""
    return isinstance(exc, RedisConnectionError | RedisTimeoutError | OSError)


def closed_transport(exc: RuntimeError) -> bool:
    """Whether ``exc`` is uvloop's refusal to write on a connection the server reset.

    redis-py's cluster client writes on a pooled connection without checking it first (its
    single-server pool does check), so after a node was killed the first command on each
    of that node's old connections meets a closed uvloop transport: a RuntimeError ('...
    the handler is closed'), not an OSError. redis-py drops that connection; the call
    failed for want of the server, like any other lost connection.
    """
    return "the handler is closed" in str(exc)


def address(url: str) -> str:
    """``host:port`` (or the socket path) of a redis URL, for messages (never its password)."""
    try:
        parts = urlsplit(url)
        if parts.scheme == "unix":
            return parts.path
        return f"{parts.hostname or 'localhost'}:{parts.port or 6379}"
    except ValueError:
        return "?"


class OutageReporter:
    """Tells a server's health of an outage once the broker has been open (a failing
    ``open`` lost nothing: its error says why), and stops ``open`` at its first failure
    when a ``rediss://`` DSN points at a plain port. Shared, not copied, by the
    per-connection copies redis-py makes of its Retry."""

    __slots__ = ("armed", "health", "tls")

    def __init__(self, health: ServerHealth, tls: tuple[str, int] | None = None) -> None:
        self.health = health
        self.armed = False
        self.tls = tls
        """``(host, port)`` of a ``rediss://`` DSN, else None."""

    def __deepcopy__(self, memo: dict[int, object]) -> OutageReporter:
        return self

    def lost(self, error: BaseException) -> None:
        if self.armed:
            settling = cluster.REJOIN_SETTLE if cluster.reconfiguring(error) else 0.0
            self.health.lost(describe(error), settling=settling)

    async def first_failure(self, error: BaseException) -> None:
        """Raise :class:`BrokerUnreachable` at once, instead of retrying for seconds, if
        ``open``'s TLS connection failed on a port that answers plain Redis."""
        if self.armed or self.tls is None or not may_be_plain_port(error):
            return
        host, port = self.tls
        if await answers_plain_redis(host, port, CONNECT_TIMEOUT):
            cause = f"{TLS_MISMATCH} (it answers plain Redis: use redis://, or the server's TLS port)"
            log.debug("%s: TLS connection failed: %s", self.health.name, error, exc_info=error)
            raise BrokerUnreachable(
                failure_message(self.health.name, cause), address=f"{host}:{port}", cause=cause
            ) from None


class ReportingRetry(Retry):
    """redis-py's reconnect-and-retry, telling the server's health when it is really gone.

    redis-py rides out a short outage inside one command (reconnect attempts, then the
    command again), so without this hook a restart of Redis went unlogged: throughput
    just dropped. One failure is not an outage -- a pooled connection the server closed
    fails once and its reconnect works -- so the health hears of it from the second
    failure of the same command on.
    """

    def __init__(self, backoff: ExponentialBackoff, retries: int, reporter: OutageReporter) -> None:
        super().__init__(backoff, retries)
        self._reporter = reporter

    async def call_with_retry(
        self, do: Callable[[], Awaitable[R]], fail: Callable[..., Any], *more: Any, **options: Any
    ) -> R:
        # ``more``/``options`` (redis-py 6+: is_retryable, with_failure_count) are passed on
        # only when given: redis-py 5's Retry takes ``do`` and ``fail`` alone.
        failures = 0

        async def failed(error: Exception, *count: int) -> None:
            nonlocal failures
            failures += 1
            if failures >= 2:
                self._reporter.lost(error)
            await fail(error, *count)
            if failures == 1:
                await self._reporter.first_failure(error)

        call: Callable[..., Awaitable[R]] = super().call_with_retry
        return await call(do, failed, *more, **options)


async def ping(client: AnyRedis) -> None:
    """PING the server; on a cluster, every master (redis-py's default is every node, and a
    replica that is down must not fail an open or a health check: masters serve pqueue)."""
    if isinstance(client, RedisCluster):
        await client.ping(target_nodes=RedisCluster.PRIMARIES)
    else:
        await client.ping()


class RedisCore:
    """Options, connection pool, keys and the clock rule; the broker builds on this."""

    _hub: Hub
    """The broker's one pub/sub connection, for every part that waits (ADR 0134; made by
    :class:`~pqueue.brokers.redis.broker.RedisBroker`)."""
    _replicas: replicas.ReplicaWait
    """Confirms writes with ``WAIT`` when ``wait_replicas`` is set (made by the broker)."""

    def __init__(self, options: RedisOptions, *, clock: Clock | None = None) -> None:
        self.options = options
        self.clock = clock
        self.prefix = options.prefix
        self.keys: GlobalKeys = global_keys(options.prefix)
        self.retention_ms = to_ms(options.retention)
        self._client: AnyRedis | None = None
        self.address = ",".join(f"{h}:{p}" for h, p in options.nodes) or address(options.url)
        self.server = f"Redis Cluster at {self.address}" if options.cluster else f"Redis at {self.address}"
        """How messages name the server (a cluster by its startup nodes)."""
        self.health: ServerHealth = health_of(self.server)
        """Shared by every broker of this process on that server: one log line per outage."""
        self.reporter = OutageReporter(self.health, tls_target(options.url))

    def unreachable(self, exc: BaseException) -> BrokerUnreachable:
        """The error for a command that could not reach the server; reports the outage once
        (only for an open broker: a failed ``open`` lost nothing). The driver's error goes
        to the DEBUG log: the message names the cause, and callers get no driver traceback.
        A cluster's reconfiguring errors count as unreachable, named without raw redirects."""
        cause = cluster.describe_cluster_error(exc) if cluster.reconfiguring(exc) else describe(exc)
        self.reporter.lost(exc)
        log.debug("%s: %s", self.server, exc, exc_info=exc)
        return BrokerUnreachable(failure_message(self.server, cause), address=self.address, cause=cause)

    def translate(self, exc: RedisError | RedisClusterException | OSError) -> BrokerError:
        """The pqueue error for a driver error (the message has the cause; callers get no
        driver traceback for an unreachable server). Both transports raise through this."""
        if isinstance(exc.__cause__, BrokerUnreachable):  # first_failure's verdict, wrapped by
            return exc.__cause__  # redis-py's reconnect-on-send (ConnectionError(exc) from exc)
        if unreachable(exc) or cluster.reconfiguring(exc):
            return self.unreachable(exc)
        return BrokerError(f"redis command failed: {exc}")

    def queue(self, name: str) -> QueueKeys:
        return queue_keys(self.prefix, name)

    def keys_for(self, queue: str, limit_key: str | None) -> QueueKeys:
        """A job's keys: its queue's, or its limit group's lane's (ADR 0110)."""
        return (
            queue_keys(self.prefix, queue) if limit_key is None else lane_keys(self.prefix, queue, limit_key)
        )

    def lanes(self, queue: str) -> Lanes:
        """The lane keys of ``queue`` (ADR 0110)."""
        return lanes(self.prefix, queue)

    @property
    def client(self) -> AnyRedis:
        if self._client is None:
            raise BrokerError("the redis broker is not open: call `await broker.open()` first")
        return self._client

    def now_arg(self) -> str:
        """ARGV[1] of every script: the injected clock in ms, or '' for the server's TIME."""
        return "" if self.clock is None else str(to_ms(self.clock.now()))

    async def now_ms(self) -> int:
        return await self.steps(self.now_ms_steps())

    def now_ms_steps(self) -> Steps[list[scripts.Command], list[Any], int]:
        """The injected clock's time, or the server's ``TIME``, in ms, as steps."""
        if self.clock is not None:
            return to_ms(self.clock.now())
        [(seconds, micros)] = yield from scripts.pipelined([("TIME",)])
        return int(seconds) * 1000 + int(micros) // 1000

    def pool_options(self) -> dict[str, Any]:
        """The connection settings both transports' pools use (the async one adds its retry)."""
        return {
            "timeout": self.options.pool_timeout,
            "decode_responses": True,
            "socket_keepalive": True,
            "socket_connect_timeout": CONNECT_TIMEOUT,  # the DSN's own socket_connect_timeout wins
            "health_check_interval": 30,
            "client_name": f"pqueue:{self.prefix}:{socket.gethostname()}:{os.getpid()}",
        }

    def invalid_dsn(self, exc: Exception) -> ConfigError:
        return ConfigError(f"invalid redis DSN {redact(self.options.url)!r}: {exc}")

    def _make_client(self) -> AnyRedis:
        opts = self.options
        try:
            if opts.cluster:
                return cluster.async_client(opts, self.pool_options(), backoff_cap=RETRY_CAP)
            pool = BlockingConnectionPool.from_url(
                opts.url,
                max_connections=opts.pool_size + 1,  # + the notification hub's pub/sub connection
                retry=ReportingRetry(
                    ExponentialBackoff(cap=RETRY_CAP, base=0.05), opts.retries, self.reporter
                ),
                retry_on_error=[RedisConnectionError, RedisTimeoutError],
                **self.pool_options(),
            )
        except (ValueError, TypeError) as exc:
            raise self.invalid_dsn(exc) from exc
        return Redis(connection_pool=pool)

    async def _open_client(self) -> None:
        if self._client is not None:
            return
        client = self._make_client()
        try:
            if isinstance(client, RedisCluster):
                await client.initialize()
            else:
                await self._refuse_cluster_node(client)
            await ping(client)
            await replicas.refuse_more_than_connected(client, self.options.wait_replicas, self.server)
            await scripts.load_all(client)
            await self._check_layout(client)
        except BaseException:
            await client.aclose()
            raise
        self._client = client
        self.reporter.armed = True

    async def _refuse_cluster_node(self, client: Redis) -> None:
        """Raise :class:`ConfigError` if a one-server DSN reaches a Redis Cluster node: its
        commands would fail with redirects for most keys (reads only)."""
        info = await client.info("cluster")
        if cluster.cluster_enabled(info):
            raise ConfigError(
                f"{self.server} is a Redis Cluster node: use redis+cluster://{self.address}/ "
                "(more startup nodes may follow, comma-separated)"
            )

    async def _check_layout(self, client: AnyRedis) -> None:
        await client.hsetnx(self.keys.meta, "layout", LAYOUT_VERSION)
        await self.check_layout(client)

    async def check_layout(self, client: AnyRedis) -> None:
        """Raise :class:`SchemaError` unless the prefix holds this pqueue's key layout (reads only)."""
        found = await client.hget(self.keys.meta, "layout")
        if found != LAYOUT_VERSION:
            raise SchemaError(
                f"redis prefix {self.prefix!r} holds key layout {found!r}; this pqueue knows layout "
                f"{LAYOUT_VERSION!r} (see docs/redis.md)"
            )

    async def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def registered_queues(self) -> list[str]:
        """Every queue that has held a job, sorted."""
        names: set[str] = await self.client.smembers(self.keys.queues)  # type: ignore[assignment]
        return sorted(names)

    async def queues_with_work(self, sets: Sequence[str], *, older_than_ms: int = 0) -> list[str]:
        """Registered queues where any of the sorted sets ``sets`` (QueueKeys attribute names)
        has a member scored at or before now - ``older_than_ms``: a cheap look (one pipelined
        ZCOUNT per queue and set) so maintenance runs scripts only where there is work."""
        queues = await self.registered_queues()
        if not queues:
            return []
        until = await self.now_ms() - older_than_ms
        commands = [("ZCOUNT", getattr(self.queue(q), s), "-inf", until) for q in queues for s in sets]
        counts = await self.run_many(commands)
        width = len(sets)
        return [q for i, q in enumerate(queues) if any(int(n) for n in counts[i * width : (i + 1) * width])]

    async def run(self, call: scripts.ScriptCall) -> Any:
        return await scripts.run(self.client, call)

    async def run_many(self, calls: Sequence[scripts.ScriptCall | tuple[Any, ...]]) -> list[Any]:
        return await self.steps(scripts.pipelined(calls))

    async def steps(self, steps: Steps[list[scripts.Command], list[Any], R]) -> R:
        """Drive an operation's steps on this broker's asyncio client (see pqueue.steps)."""
        return await run_async(steps, self._send)

    async def _send(self, commands: Sequence[scripts.Command]) -> list[Any]:
        """One round trip: a lone command without a pipeline's cost; refusals in place of replies."""
        client = self.client
        if isinstance(client, RedisCluster):
            return await cluster.send(client, commands)
        if len(commands) == 1:
            execute: Callable[..., Awaitable[Any]] = client.execute_command
            try:
                return [await execute(*commands[0])]
            except ResponseError as exc:
                return [exc]
        return await scripts.send_pipeline(client, commands)
