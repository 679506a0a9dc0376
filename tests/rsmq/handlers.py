"""Handlers for the consumer tests and ``pqueue rsmq worker`` runs: a message's body says
what to do (``fail`` raises, ``slow:S`` sleeps S seconds); every run is recorded."""

from __future__ import annotations

import asyncio
import time

from pqueue.rsmq import RsmqMessage

runs: list[tuple[str, int]] = []
"""(body, rc) of every run in this process."""


def record(message: RsmqMessage) -> None:
    runs.append((message.message, message.rc))
    if message.message == "fail":
        raise ValueError(f"failing on purpose (receive {message.rc})")
    if message.message.startswith("slow:"):
        time.sleep(float(message.message.removeprefix("slow:")))


async def record_async(message: RsmqMessage) -> None:
    runs.append((message.message, message.rc))
    if message.message == "fail":
        raise ValueError("failing on purpose")
    if message.message.startswith("slow:"):
        await asyncio.sleep(float(message.message.removeprefix("slow:")))
