"""The broker check behind ``/readyz``, and the one warning a served app logs at start when
the broker is not ready (issue 30): an operator learns it from the log, not from a 503 later.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from pqueue.brokers import redact
from pqueue.errors import BrokerUnavailable

if TYPE_CHECKING:
    from pqueue.client import AsyncClient

log = logging.getLogger("pqueue.web")

READY_TIMEOUT = 3.0
"""Seconds ``/readyz`` waits for the broker: a probe must answer before its own timeout."""


class NotReady(Exception):
    """The broker did not pass the check; the message is one line without a password."""

    def __init__(self, message: str, *, unreachable: bool) -> None:
        super().__init__(message)
        self.unreachable = unreachable


async def readiness(client: AsyncClient) -> str:
    """What was checked (``Client.health``), within :data:`READY_TIMEOUT`; raises
    :class:`NotReady` saying why not."""
    try:
        async with asyncio.timeout(READY_TIMEOUT):
            return await client.health()
    except TimeoutError:
        raise NotReady(f"the broker did not answer within {READY_TIMEOUT:g} s", unreachable=True) from None
    except Exception as exc:  # noqa: BLE001 - not ready is an answer, whatever the cause
        unreachable = isinstance(exc, BrokerUnavailable)
        raise NotReady(f"{type(exc).__name__}: {exc}", unreachable=unreachable) from None


async def warn_if_not_ready(client: AsyncClient) -> None:
    """Check the broker once and log one WARNING if it is not ready; serving goes on."""
    try:
        await readiness(client)
    except NotReady as problem:
        state = "unreachable" if problem.unreachable else "not ready"
        log.warning("broker %s %s (%s); /readyz is 503 until it is back", redact(client.dsn), state, problem)
