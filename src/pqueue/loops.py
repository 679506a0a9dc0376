"""The event loop pqueue runs the loops it owns on (the worker's, the sync Client's).

uvloop when it is installed (``pip install "pqueue-jobs[uvloop]"``), else the standard
library's: the same choice pgqueuer and taskiq make, and for pqueue it cuts the CPU of
every round trip (ADR 0053). ``PQUEUE_LOOP`` (or ``pqueue worker --loop``) overrides
it: ``asyncio`` always takes the standard loop, ``uvloop`` requires uvloop.
Loops the application owns (``AsyncClient`` in a web app, ``Worker.serve``) are left
as they are.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from pqueue.errors import ConfigError
from pqueue.extras import install_hint

T = TypeVar("T")

LOOP_CHOICES = ("auto", "asyncio", "uvloop")
LOOP_ENV = "PQUEUE_LOOP"

LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def loop_choice(text: str | None = None) -> str:
    """A validated choice: ``text``, else ``PQUEUE_LOOP``, else ``auto``."""
    raw = text if text is not None else os.environ.get(LOOP_ENV) or "auto"
    choice = raw.strip().lower()
    if choice not in LOOP_CHOICES:
        where = f"unknown event loop {raw!r}" if text is not None else f"{LOOP_ENV}={raw!r}"
        raise ConfigError(f"{where}: expected one of {', '.join(LOOP_CHOICES)}")
    return choice


def loop_factory(choice: str | None = None) -> LoopFactory:
    """What makes a new event loop for ``choice`` (see :func:`loop_choice`)."""
    resolved = loop_choice(choice)
    if resolved == "asyncio":
        return asyncio.new_event_loop
    uvloop = _import_uvloop()
    if uvloop is not None:
        factory: LoopFactory = uvloop.new_event_loop
        return factory
    if resolved == "uvloop":
        raise ConfigError(
            f"the uvloop event loop was asked for, but uvloop is not installed: {install_hint('uvloop')}"
        )
    return asyncio.new_event_loop


def new_event_loop(choice: str | None = None) -> asyncio.AbstractEventLoop:
    """A new, not yet running loop of the chosen kind (the sync Client's private loop)."""
    return loop_factory(choice)()


def run(main: Coroutine[Any, Any, T], *, loop: str | None = None) -> T:
    """``asyncio.run(main)`` on the chosen loop."""
    try:
        factory = loop_factory(loop)
    except BaseException:
        main.close()  # never awaited: close it, so no "was never awaited" warning follows the error
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def running_loop_name() -> str:
    """``uvloop`` or ``asyncio``: which kind of loop runs the caller (for logs and checks)."""
    module = type(asyncio.get_running_loop()).__module__
    return "uvloop" if module.split(".")[0] == "uvloop" else "asyncio"


def _import_uvloop() -> Any:
    """The uvloop module, or None when it is not installed."""
    try:
        return importlib.import_module("uvloop")
    except ImportError:
        return None
