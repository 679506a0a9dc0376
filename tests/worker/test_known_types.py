"""A client given the router refuses job types the router does not know, on every enqueue path.

A typo such as ``"email:welcom"`` would otherwise be stored and bounce between workers
for days (ADR 0022); with the router at hand the producer can say so at once, and
nothing is stored. A client without a router stays free to enqueue any type.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from pqueue import AsyncClient, Client, InvalidJob, Job, JobStatus, Router, Task, UnknownJobType
from pqueue.clock import ManualClock


def email_router() -> Router:
    router = Router()

    @router.task("email:welcome", queue="critical")
    async def welcome(job: Job) -> None: ...

    @router.task("report:daily")
    async def daily(job: Job) -> None: ...

    return router


ASYNC_PATHS: dict[str, Callable[[AsyncClient], Awaitable[Any]]] = {
    "enqueue": lambda c: c.enqueue("email:welcom", {"user": 1}),
    "enqueue_task": lambda c: c.enqueue_task(Task("email:welcom", {"user": 1})),
    "enqueue_many": lambda c: c.enqueue_many([Task("email:welcome", 1), Task("email:welcom", 2)]),
    "enqueue_map": lambda c: c.enqueue_map("email:welcom", [1, 2, 3]),
}
SYNC_PATHS: dict[str, Callable[[Client], Any]] = {
    "enqueue": lambda c: c.enqueue("email:welcom", {"user": 1}),
    "enqueue_task": lambda c: c.enqueue_task(Task("email:welcom", {"user": 1})),
    "enqueue_many": lambda c: c.enqueue_many([Task("email:welcome", 1), Task("email:welcom", 2)]),
    "enqueue_map": lambda c: c.enqueue_map("email:welcom", [1, 2, 3]),
}


async def nothing_stored(client: AsyncClient) -> None:
    assert sum((await client.stats()).totals.values()) == 0


@pytest.mark.parametrize("path", sorted(ASYNC_PATHS))
async def test_async_client_refuses_an_unknown_type_and_stores_nothing(
    path: str, backend_dsn: str, clock: ManualClock, client: AsyncClient
) -> None:
    async with AsyncClient(backend_dsn, clock=clock, router=email_router()) as routed:
        with pytest.raises(UnknownJobType, match=r"'email:welcom'.*did you mean 'email:welcome'\?"):
            await ASYNC_PATHS[path](routed)
    await nothing_stored(client)


@pytest.mark.parametrize("path", sorted(SYNC_PATHS))
async def test_sync_client_refuses_an_unknown_type_and_stores_nothing(
    path: str, backend_dsn: str, clock: ManualClock, client: AsyncClient
) -> None:
    def produce() -> None:
        with Client(backend_dsn, clock=clock, router=email_router()) as routed:
            SYNC_PATHS[path](routed)

    with pytest.raises(UnknownJobType, match=r"did you mean 'email:welcome'\?"):
        await asyncio.to_thread(produce)
    await nothing_stored(client)


async def test_handler_enqueue_is_checked_by_the_client_it_goes_through(
    backend_dsn: str, clock: ManualClock, client: AsyncClient
) -> None:
    other = Router()  # e.g. a module's router the producer's router never included

    @other.task("email:welcom")
    async def typo(job: Job) -> None: ...

    def produce() -> None:
        with Client(backend_dsn, clock=clock, router=email_router()) as routed:
            other.use(routed)
            with pytest.raises(UnknownJobType):
                typo.enqueue({"user": 1})
            with pytest.raises(UnknownJobType):
                asyncio.run(typo.enqueue_async({"user": 1}))

    await asyncio.to_thread(produce)
    await nothing_stored(client)


async def test_known_types_still_take_the_handlers_defaults(
    backend_dsn: str, clock: ManualClock, client: AsyncClient
) -> None:
    async with AsyncClient(backend_dsn, clock=clock, router=email_router()) as routed:
        result = await routed.enqueue("email:welcome", {"user": 1})
        [mapped] = await routed.enqueue_map("report:daily", [{"day": 1}])
    assert (await client.get_job(result.id)).queue == "critical"
    assert (await client.get_job(mapped.id)).status is JobStatus.PENDING


def test_the_error_is_a_validation_error_naming_what_is_registered() -> None:
    router = email_router()
    with pytest.raises(UnknownJobType) as info:
        router.handler_for("billing:refund")
    assert isinstance(info.value, InvalidJob) and isinstance(info.value, LookupError)
    message = str(info.value)
    assert "did you mean" not in message  # nothing close: no guess
    assert "'email:welcome', 'report:daily'" in message and "nothing was enqueued" in message
    assert router.handler_for("report:daily").name == "report:daily"


def test_a_long_registry_is_not_listed_in_full() -> None:
    router = Router()
    for i in range(50):
        router.task(f"bulk:t{i:02d}")(lambda job: None)
    with pytest.raises(UnknownJobType) as info:
        router.handler_for("bulk:t5x")
    message = str(info.value)
    listed = message.split("(registered: ")[1].split(", ...", maxsplit=1)[0]
    assert "did you mean 'bulk:t" in message and "(50 in all)" in message
    assert listed.count("'bulk:") == 20
