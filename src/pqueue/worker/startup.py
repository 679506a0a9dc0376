"""A worker's first connection: at once, or -- with ``wait_for_broker`` -- waiting for a
broker that is not reachable yet (a container started before its database, a replacement
started during a server restart), with one WARNING, not a failed start per try."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from pqueue.broker import FullBroker
from pqueue.errors import BrokerUnavailable

log = logging.getLogger("pqueue.worker")

FIRST_PAUSE = 0.2
MOST_PAUSE = 2.0
"""Seconds between tries while waiting: from 0.2, doubling to 2."""


async def open_broker(
    make: Callable[[], FullBroker], *, wait: float, stop: asyncio.Event
) -> FullBroker | None:
    """An open broker from ``make()``; an unreachable one is tried again for up to ``wait``
    seconds (then its error is raised, as without waiting). None when ``stop`` is set
    meanwhile. A bad DSN, a missing schema or a refused option fail at once."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    pause = FIRST_PAUSE
    waited = False
    while True:
        broker = make()
        try:
            await broker.open()
        except BrokerUnavailable as exc:
            with contextlib.suppress(Exception):
                await broker.close()
            if loop.time() + pause > deadline:
                raise
            if not waited:
                log.warning("%s; waiting up to %gs for it (wait_for_broker)", exc, wait)
                waited = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), pause)
            if stop.is_set():
                return None
            pause = min(pause * 2, MOST_PAUSE)
            continue
        if waited:
            log.info("the broker answers: starting")
        return broker
