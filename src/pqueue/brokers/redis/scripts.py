"""The Lua scripts: loaded once from ``lua/*.lua``, called by SHA with ``EVALSHA``.

Each script is ``lua/_lib.lua`` followed by its own file, so the shared helpers are
locals of every script. The SHA1 is computed here, not asked of the server; a
``NOSCRIPT`` reply (after ``SCRIPT FLUSH`` or a server restart) loads every script
again and repeats the calls that were refused, transparently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError

SCRIPT_NAMES = (
    "enqueue",
    "claim",
    "park",
    "ack",
    "fail",
    "release",
    "extend",
    "recover",
    "promote",
    "cancel",
    "requeue_dead",
    "purge_dead",
    "prune",
    "activity",
    "idempotency_begin",
    "idempotency_end",
)

Arg = str | int | float | bytes


def _read(name: str) -> str:
    return (files("pqueue.brokers.redis") / "lua" / f"{name}.lua").read_text(encoding="utf-8")


def _load_sources() -> dict[str, str]:
    lib = _read("_lib")
    return {name: f"{lib}\n{_read(name)}" for name in SCRIPT_NAMES}


SOURCES: dict[str, str] = _load_sources()
"""Script name -> full source (prelude + body), read once at import."""
SHAS: dict[str, str] = {name: hashlib.sha1(src.encode()).hexdigest() for name, src in SOURCES.items()}


@dataclass(frozen=True, slots=True)
class ScriptCall:
    """One script invocation: which script, its KEYS and its ARGV."""

    name: str
    keys: Sequence[str]
    args: Sequence[Arg]

    def command(self) -> tuple[Arg, ...]:
        return ("EVALSHA", SHAS[self.name], len(self.keys), *self.keys, *self.args)


async def load_all(client: Redis) -> None:
    """Load every script into the server's script cache (one round trip)."""
    pipe = client.pipeline(transaction=False)
    for source in SOURCES.values():
        pipe.script_load(source)
    await pipe.execute()


async def run(client: Redis, call: ScriptCall) -> Any:
    """Run one script, reloading the cache once if the server lost it."""
    execute: Callable[..., Awaitable[Any]] = client.execute_command
    try:
        return await execute(*call.command())
    except NoScriptError:
        await load_all(client)
        return await execute(*call.command())


async def run_many(client: Redis, calls: Sequence[ScriptCall | tuple[Arg, ...]]) -> list[Any]:
    """Run commands and script calls in one pipelined round trip, in order.

    Plain commands are given as tuples. Calls refused with ``NOSCRIPT`` did nothing, so
    they are repeated (in order) after reloading; any other error is raised.
    """
    commands = [c.command() if isinstance(c, ScriptCall) else c for c in calls]
    results = await _pipeline(client, commands)
    refused = [i for i, r in enumerate(results) if isinstance(r, NoScriptError)]
    if refused:
        await load_all(client)
        again = await _pipeline(client, [commands[i] for i in refused])
        for i, result in zip(refused, again, strict=True):
            results[i] = result
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


async def _pipeline(client: Redis, commands: Sequence[tuple[Arg, ...]]) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    return list(await pipe.execute(raise_on_error=False))
