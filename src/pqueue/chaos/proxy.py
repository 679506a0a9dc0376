"""A loopback TCP proxy in front of one broker server that injects network faults on cue:
every connection reset at once (a TCP RST both ways), a stall (bytes held, none dropped,
until it ends) and added latency (each chunk, each way, in order). ``pqueue chaos`` runs
its workers and clients through it.

It carries all of the run's broker traffic, so it does no per-byte work: asyncio
protocols pass whole reads along (one write per chunk), and a side whose bytes pile up
(a stall, a slow reader) stops reading its sender, as TCP would.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
import struct
from collections import deque
from dataclasses import dataclass
from typing import cast
from urllib.parse import parse_qsl, unquote

from pqueue.errors import ConfigError

__all__ = ["FaultProxy", "proxied_dsn", "upstream_of"]

HIGH_WATER = 1 << 20
"""Bytes one direction of a connection may hold (stalled or delayed) before the proxy
stops reading its sender; it reads again below half of this."""
DEFAULT_PORTS = {"redis": 6379, "postgresql": 5432, "postgres": 5432}
_RST = struct.pack("ii", 1, 0)
"""``SO_LINGER`` on, 0 seconds: ``close()`` sends a TCP RST, not a FIN."""


class FaultProxy:
    """Forwards every connection to ``host:port`` (:attr:`port`, once started) to the
    upstream server, faults included. One event loop; not thread-safe."""

    def __init__(self, upstream_host: str, upstream_port: int, *, host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self.host = host
        self.port = 0
        """The port it listens on, once :meth:`start` has bound one."""
        self.latency = 0.0
        self.stalled = False
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._open: set[_Side] = set()
        self._connecting: set[asyncio.Task[None]] = set()

    @property
    def connections(self) -> int:
        """Client connections open now."""
        return len(self._links)

    async def start(self) -> None:
        """Listen on a port the kernel picks (:attr:`port`); once (a second call does nothing)."""
        if self._server is not None:
            return
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Link(self).client, self.host, 0, backlog=1024)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and reset every connection; returns once every socket is closed."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        self.reset()
        for side in list(self._open):  # closed gracefully, but still flushing to a peer
            side.end(abort=True)
        for task in self._connecting:
            task.cancel()
        await asyncio.gather(*self._connecting, return_exceptions=True)
        await asyncio.gather(*(side.lost for side in list(self._open)))
        if server is not None:
            await server.wait_closed()

    def reset(self) -> int:
        """Tear down every open connection with a TCP RST on both sides; returns how many.
        New connections are taken at once."""
        links = list(self._links)
        for link in links:
            link.finish(abort=True)
        return len(links)

    def stall(self) -> None:
        """Stop forwarding bytes either way: connections stay open (new ones are taken),
        their bytes are held until :meth:`unstall`."""
        self.stalled = True

    def unstall(self) -> None:
        """Forward everything held, in order (after any latency still due), and go on."""
        self.stalled = False
        for link in list(self._links):
            link.up.pump()
            link.down.pump()

    def set_latency(self, seconds: float) -> None:
        """Delay every chunk by ``seconds`` each way from now on, keeping their order (0: none)."""
        if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds < 0:
            raise ConfigError(f"proxy latency must be a finite number of seconds >= 0, got {seconds!r}")
        self.latency = float(seconds)


class _Side(asyncio.Protocol):
    """One end of a link: a client's connection to the proxy, or the proxy's to the server."""

    def __init__(self, link: _Link) -> None:
        self.link = link
        self.out: _Pipe
        """The pipe this side's bytes go into."""
        self.into: _Pipe
        """The pipe that writes to this side."""
        self.transport: asyncio.Transport | None = None
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._paused: set[str] = set()

    @property
    def ready(self) -> bool:
        return self.transport is not None and not self.transport.is_closing()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is no asyncio.Transport subclass
        self.link.proxy._open.add(self)
        self.link.made(self)

    def data_received(self, data: bytes) -> None:
        self.out.feed(data)

    def eof_received(self) -> bool:
        self.out.feed_eof()
        return True  # half-closed: the other way may still carry bytes

    def pause_writing(self) -> None:
        self.into.source.pause("sink")

    def resume_writing(self) -> None:
        self.into.source.resume("sink")

    def connection_lost(self, exc: Exception | None) -> None:
        self.link.proxy._open.discard(self)
        if not self.lost.done():
            self.lost.set_result(None)
        self.link.finish(abort=exc is not None)

    def pause(self, reason: str) -> None:
        if not self._paused and self.ready:
            self.transport.pause_reading()  # type: ignore[union-attr]
        self._paused.add(reason)

    def resume(self, reason: str) -> None:
        if reason not in self._paused:
            return
        self._paused.discard(reason)
        if not self._paused and self.ready:
            self.transport.resume_reading()  # type: ignore[union-attr]

    def end(self, *, abort: bool) -> None:
        """Close the connection: with a TCP RST (``abort``), or after its buffered bytes."""
        transport = self.transport
        if transport is None:
            return
        if not abort:
            transport.close()
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):  # already gone
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RST)
        transport.abort()


class _Pipe:
    """One direction of a link: what ``source`` sends, written to ``sink`` in order, each
    chunk once its latency is over and no stall holds it."""

    def __init__(self, proxy: FaultProxy, source: _Side, sink: _Side) -> None:
        self.proxy = proxy
        self.source = source
        self.sink = sink
        self.queue: deque[tuple[float, bytes]] = deque()
        self.held = 0
        self.eof = False
        """The source half-closed: pass the EOF on once the queue is empty."""
        self.eof_sent = False
        self.timer: asyncio.TimerHandle | None = None

    def feed(self, data: bytes) -> None:
        proxy = self.proxy
        if not self.queue and not proxy.stalled and not proxy.latency and self.sink.ready:
            self.sink.transport.write(data)  # type: ignore[union-attr]
            return
        due = asyncio.get_running_loop().time() + proxy.latency
        if self.queue and self.queue[-1][0] > due:  # the latency went down: keep the order
            due = self.queue[-1][0]
        self.queue.append((due, data))
        self.held += len(data)
        if self.held > HIGH_WATER:
            self.source.pause("backlog")
        self.pump()

    def feed_eof(self) -> None:
        self.eof = True
        self.pump()

    def pump(self) -> None:
        """Write every chunk that is due, unless stalled; come back when the next one is."""
        if self.proxy.stalled or not self.sink.ready:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        due: list[bytes] = []
        while self.queue and self.queue[0][0] <= now:
            due.append(self.queue.popleft()[1])
        if due:
            self.held -= sum(map(len, due))
            self.sink.transport.writelines(due)  # type: ignore[union-attr]
            if self.held <= HIGH_WATER // 2:
                self.source.resume("backlog")
        if self.queue:
            if self.timer is None:
                self.timer = loop.call_at(self.queue[0][0], self._wake)
        elif self.eof and not self.eof_sent:
            self.eof_sent = True
            self.sink.transport.write_eof()  # type: ignore[union-attr]
            self.sink.link.half_closed()

    def _wake(self) -> None:
        self.timer = None
        self.pump()

    def drop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.queue.clear()
        self.held = 0


class _Link:
    """One client connection and the proxy's connection to the server for it."""

    def __init__(self, proxy: FaultProxy) -> None:
        self.proxy = proxy
        self.client = _Side(self)
        self.server = _Side(self)
        self.up = self.client.out = self.server.into = _Pipe(proxy, self.client, self.server)
        self.down = self.server.out = self.client.into = _Pipe(proxy, self.server, self.client)
        self.done = False

    def made(self, side: _Side) -> None:
        if side is self.server:
            if self.done:  # reset while it connected
                side.end(abort=True)
            else:
                self.up.pump()
            return
        if self.proxy._server is None:  # accepted as the proxy closed
            self.done = True
            side.end(abort=True)
            return
        self.proxy._links.add(self)
        task = asyncio.get_running_loop().create_task(self._connect())
        self.proxy._connecting.add(task)
        task.add_done_callback(self.proxy._connecting.discard)

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.create_connection(lambda: self.server, *self.proxy.upstream)
        except OSError:  # the server is down: the client sees its connection reset
            self.finish(abort=True)

    def half_closed(self) -> None:
        """Both ways have passed their EOF on: close both connections."""
        if self.up.eof_sent and self.down.eof_sent:
            self.finish(abort=False)

    def finish(self, *, abort: bool) -> None:
        if self.done:
            return
        self.done = True
        self.proxy._links.discard(self)
        self.up.drop()
        self.down.drop()
        self.client.end(abort=abort)
        self.server.end(abort=abort)


@dataclass(frozen=True, slots=True)
class _Route:
    """A DSN cut around its ``host:port``: ``head + host:port + tail``."""

    host: str
    port: int
    head: str
    tail: str


def proxied_dsn(dsn: str, port: int) -> str | None:
    """``dsn`` with its host and port replaced by ``127.0.0.1:port`` (user, password, path
    and query kept exactly), or None where a TCP proxy cannot stand in: no network
    (``memory://``, ``sqlite://``), a Redis Cluster (its nodes advertise their own
    addresses), TLS that checks the host (``rediss://``, ``sslmode=require`` or
    ``verify-*``), a Postgres unix socket, an address in the query, several hosts."""
    route = _route(dsn)
    if isinstance(route, str):
        return None
    return f"{route.head}127.0.0.1:{port}{route.tail}"


def upstream_of(dsn: str) -> tuple[str, int]:
    """The host and port of ``dsn``'s server (Redis 6379, Postgres 5432 when not given);
    :class:`ConfigError` where :func:`proxied_dsn` is None, saying why."""
    route = _route(dsn)
    if isinstance(route, str):
        raise ConfigError(f"no TCP proxy can stand in for this DSN: {route}")
    return route.host, route.port


def _route(dsn: str) -> _Route | str:
    """The DSN's route, or why it has none a proxy could take."""
    scheme, sep, rest = dsn.partition("://") if isinstance(dsn, str) else ("", "", "")
    scheme = scheme.lower()
    problem = _scheme_problem(scheme) if sep else "not a DSN (scheme://...)"
    if problem:
        return problem
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    userinfo, at, address = rest[:end].rpartition("@")
    route = _split_address(address, DEFAULT_PORTS[scheme])
    if isinstance(route, str):
        return route
    host, port = route
    if scheme != "redis":
        problem = _postgres_problem(host, rest[end:])
        if problem:
            return problem
    head = dsn[: len(dsn) - len(rest)] + userinfo + at
    return _Route(host or "localhost", port, head, rest[end:])


def _scheme_problem(scheme: str) -> str | None:
    if scheme in ("memory", "sqlite"):
        return f"{scheme}:// has no network connection"
    if scheme.endswith("+cluster"):
        return "a Redis Cluster's nodes advertise their own addresses, which clients then use"
    if scheme == "rediss":
        return "rediss:// checks the server's name in its TLS certificate"
    if scheme not in DEFAULT_PORTS:
        return f"{scheme}:// is not a Redis or Postgres DSN"
    return None


def _split_address(address: str, default_port: int) -> tuple[str, int] | str:
    if "," in address:
        return "it names several hosts"
    if address.startswith("["):  # an IPv6 address
        host, _, after = address[1:].partition("]")
        port = after.removeprefix(":")
    else:
        host, _, port = address.partition(":")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        return f"its port {port!r} is not a port number"
    return unquote(host), int(port) if port else default_port


def _postgres_problem(host: str, tail: str) -> str | None:
    query = dict(parse_qsl(tail.partition("?")[2].partition("#")[0], keep_blank_values=True))
    if not host or host.startswith("/") or query.get("host", "").startswith("/"):
        return "it reaches Postgres by a unix socket"
    if any(key in query for key in ("host", "hostaddr", "port")):
        return "its address is in the query (host=, hostaddr= or port=)"
    if query.get("sslmode", "") in ("require", "verify-ca", "verify-full") or query.get("ssl") == "true":
        return f"sslmode={query.get('sslmode', 'require')} (TLS through a proxy would fail its checks)"
    return None
