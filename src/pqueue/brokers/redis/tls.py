"""Telling a ``rediss://`` DSN that points at a plain Redis port from a real outage.

A TLS client's ClientHello on a plain port is, to Redis, an inline command without its
line end: the server waits for the rest, the handshake times out, and redis-py's retries
turned that into ``unreachable: timeout`` after some 16 s. When the first connection of
``open`` fails, :func:`answers_plain_redis` asks the port in plain text; a Redis reply
there means the DSN, not the network, is wrong, and ``open`` says so at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit

from redis.exceptions import TimeoutError as RedisTimeoutError

PLAIN_REPLIES = (b"+", b"-")
"""First bytes of a Redis reply to a plain ``PING``: ``+PONG``, or an error such as
``-NOAUTH``. A TLS server answers plain text with an alert record (0x15) or hangs up."""


def tls_target(url: str) -> tuple[str, int] | None:
    """``(host, port)`` of a ``rediss://`` URL, or None for any other (nothing to check)."""
    try:
        parts = urlsplit(url)
        if parts.scheme != "rediss":
            return None
        return parts.hostname or "localhost", parts.port or 6379
    except ValueError:
        return None


def may_be_plain_port(error: BaseException) -> bool:
    """Whether a failed TLS connection looks like a plain port: the handshake timed out
    (Redis waits for a line end), or broke on a non-TLS reply (the ClientHello held one)."""
    if isinstance(error, RedisTimeoutError | TimeoutError):
        return True
    text = str(error).lower()
    return "ssl" in text or "tls" in text or "timeout" in text


async def answers_plain_redis(host: str, port: int, timeout: float) -> bool:
    """Whether ``host:port`` answers a plain-text ``PING`` as Redis does."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                writer.write(b"PING\r\n")
                await writer.drain()
                reply = await reader.read(1)
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
    except (OSError, TimeoutError):
        return False
    return reply in PLAIN_REPLIES
