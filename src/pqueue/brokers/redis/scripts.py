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
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import NoScriptError

from pqueue.steps import Steps, run_async

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
    "schedules_register",
    "schedules_mark",
    "pause",
    "resume",
    "cancel_active",
    "enqueue_waiting",
    "link",
    "settle",
    "watch",
)

Arg = str | int | float | bytes


def _read(name: str) -> str:
    return (files("pqueue.brokers.redis") / "lua" / f"{name}.lua").read_text(encoding="utf-8")


def _load_sources() -> dict[str, str]:
    lib = _read("_lib")
    extra = {"claim": _read("_limits") + "\n"}  # rate and concurrency limits (ADR 0110)
    return {name: f"{lib}\n{extra.get(name, '')}{_read(name)}" for name in SCRIPT_NAMES}


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

    def source_command(self) -> tuple[Arg, ...]:
        """``EVAL`` with the script's source: for a MULTI/EXEC, where a NOSCRIPT refusal of
        one call would leave the others applied."""
        return ("EVAL", SOURCES[self.name], len(self.keys), *self.keys, *self.args)


async def load_all(client: Redis | RedisCluster) -> None:
    """Load every script into the server's script cache (one round trip; on a cluster,
    one per script, each sent to every master)."""
    if isinstance(client, RedisCluster):
        for source in SOURCES.values():
            await client.script_load(source)
        return
    pipe = client.pipeline(transaction=False)
    for source in SOURCES.values():
        pipe.script_load(source)
    await pipe.execute()


async def run(client: Redis | RedisCluster, call: ScriptCall) -> Any:
    """Run one script, reloading the cache once if the server lost it."""
    execute: Callable[..., Awaitable[Any]] = client.execute_command
    try:
        return await execute(*call.command())
    except NoScriptError:
        await load_all(client)
        return await execute(*call.command())


Command = tuple[Arg, ...]

LOAD_ALL: list[Command] = [("SCRIPT", "LOAD", source) for source in SOURCES.values()]
"""The pipeline that loads every script (what :func:`load_all` sends)."""


def pipelined(
    calls: Sequence[ScriptCall | Command], *, errors_in_place: bool = False
) -> Steps[list[Command], list[Any], list[Any]]:
    """Commands and script calls in one pipelined round trip, in order, as steps (both
    transports drive these; the pipeline I/O returns errors in place of replies).

    Plain commands are given as tuples. Calls refused with ``NOSCRIPT`` did nothing, so
    they are repeated (in order) after reloading; any other error is raised, or with
    ``errors_in_place`` left in place of its reply.
    """
    commands = [c.command() if isinstance(c, ScriptCall) else c for c in calls]
    results = yield commands
    refused = [i for i, r in enumerate(results) if isinstance(r, NoScriptError)]
    if refused:
        yield LOAD_ALL
        again = yield [commands[i] for i in refused]
        for i, result in zip(refused, again, strict=True):
            results[i] = result
    for result in results:
        if isinstance(result, Exception) and not errors_in_place:
            raise result
    return results


async def run_atomic(
    client: Redis | RedisCluster, calls: Sequence[ScriptCall | tuple[Arg, ...]]
) -> list[Any]:
    """Run commands and script calls in one MULTI/EXEC: all of them, or (if the client dies
    before EXEC) none. Scripts go by source, so none can be refused for a flushed cache.

    A cluster has no MULTI across slots: there the calls run one after another, in the
    given order (ADR 0143 says what a producer dying half-way leaves, and how a retry with
    the same job ids finishes it)."""
    if isinstance(client, RedisCluster):
        return [
            await (run(client, c) if isinstance(c, ScriptCall) else client.execute_command(*c)) for c in calls
        ]
    pipe = client.pipeline(transaction=True)
    for call in calls:
        pipe.execute_command(*(call.source_command() if isinstance(call, ScriptCall) else call))
    return list(await pipe.execute())


async def run_many(client: Redis, calls: Sequence[ScriptCall | Command]) -> list[Any]:
    """Run commands and script calls in one pipelined round trip, in order (:func:`pipelined`)."""
    return await run_async(pipelined(calls), lambda commands: send_pipeline(client, commands))


async def send_pipeline(client: Redis, commands: Sequence[Command]) -> list[Any]:
    """One pipelined round trip; a refused command's error stands in place of its reply."""
    pipe = client.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    return list(await pipe.execute(raise_on_error=False))
