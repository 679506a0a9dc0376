"""A write on a connection the server reset, under uvloop, is an unreachable server.

Found by the cluster restart test (tests/integration/redis_cluster/test_restart.py): after
a master was killed, a worker's claim on one of that node's old pooled connections raised
uvloop's ``RuntimeError: ... the handler is closed`` straight out of redis-py's cluster
client, and the worker logged 'claim failed unexpectedly' with a traceback. Here the
error is the real one (a uvloop transport whose peer sent a reset) raised inside a
broker method, which must raise BrokerUnreachable and tell the server's health.
"""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

pytest.importorskip("redis")
pytest.importorskip("uvloop")

import uvloop

from pqueue.brokers.redis.config import RedisOptions
from pqueue.brokers.redis.core import RedisCore, translated
from pqueue.errors import BrokerUnreachable


async def _write_after_reset() -> None:
    """Connect to a listener that resets the connection (SO_LINGER 0), read the reset,
    then write: uvloop raises its RuntimeError."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        reader, writer = await asyncio.open_connection(*listener.getsockname())
        peer, _ = listener.accept()
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()
        with pytest.raises(ConnectionError):
            await reader.read(1)
        writer.writelines([b"PING\r\n"])


class _Core(RedisCore):
    @translated
    async def ping_after_reset(self) -> None:
        await _write_after_reset()


def test_a_write_on_a_reset_uvloop_connection_is_an_unreachable_server() -> None:
    core = _Core(RedisOptions.parse("redis+cluster://127.0.0.1:1/?prefix=pqreset", {}))
    core.reporter.armed = True  # as after open(): outages are reported

    async def main() -> None:
        with pytest.raises(BrokerUnreachable) as caught:
            await core.ping_after_reset()
        assert "server closed the connection" in str(caught.value)
        assert caught.value.__cause__ is None and caught.value.__suppress_context__
        assert core.health.down
        core.health.ok()

    uvloop.run(main())


def test_other_runtime_errors_are_not_taken_for_an_outage() -> None:
    class _Broken(RedisCore):
        @translated
        async def fail(self) -> None:
            raise RuntimeError("something else")

    broken = _Broken(RedisOptions.parse("redis+cluster://127.0.0.1:1/?prefix=pqreset", {}))
    with pytest.raises(RuntimeError, match="something else"):
        uvloop.run(broken.fail())
