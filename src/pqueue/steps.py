"""One implementation of a broker operation, two transports: operations written as steps.

An operation that talks to a server is a generator: it yields what to send (a pipeline
of Redis commands, one SQL statement, a batch of job specs), receives the reply, and
returns its result. It decides everything (arguments, which script or statement, how a
reply decodes, which error means what); the driver only does the I/O, awaited
(:func:`run_async`) or blocking (:func:`run_sync`). An error of the I/O is thrown into
the generator at its ``yield``, so the operation's own rules handle it there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import TypeVar

Q = TypeVar("Q")
R = TypeVar("R")
T = TypeVar("T")

Steps = Generator[Q, R, T]
"""Yields requests ``Q``, is sent their replies ``R``, returns ``T``."""


def run_sync(steps: Steps[Q, R, T], io: Callable[[Q], R]) -> T:
    """Drive ``steps`` with a blocking ``io``: the caller's thread does the round trips."""
    try:
        request = next(steps)
        while True:
            try:
                reply = io(request)
            except Exception as exc:  # noqa: BLE001 - the operation decides what the error means
                request = steps.throw(exc)
            else:
                request = steps.send(reply)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def run_async(steps: Steps[Q, R, T], io: Callable[[Q], Awaitable[R]]) -> T:
    """Drive ``steps`` with an awaitable ``io`` (the brokers' own asyncio transport)."""
    try:
        request = next(steps)
        while True:
            try:
                reply = await io(request)
            except Exception as exc:  # noqa: BLE001 - the operation decides what the error means
                request = steps.throw(exc)
            else:
                request = steps.send(reply)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
