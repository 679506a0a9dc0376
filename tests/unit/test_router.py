"""Router: registration rules, handler defaults, and where handler.enqueue() sends jobs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from pqueue import (
    Client,
    ClientClosed,
    ConfigError,
    ConstantBackoff,
    InvalidName,
    Job,
    JobStatus,
    Router,
    Task,
)
from pqueue.ids import new_id
from pqueue.options import DECLARED_OPTIONS, RUN_TIME_OPTIONS
from pqueue.retry import DEFAULT_RETRY_POLICY


def test_task_registers_sync_and_async_handlers_with_their_defaults() -> None:
    router = Router()
    policy = ConstantBackoff(5)

    @router.task("email:welcome", queue="critical", max_retries=7, timeout=12, retry=policy)
    async def welcome(job: Job) -> str:
        """Send the welcome mail."""
        return "sent"

    @router.task("report:build")
    def build(job: Job) -> None: ...

    assert router.get("email:welcome") is welcome and "report:build" in router and len(router) == 2
    assert (welcome.queue, welcome.max_retries, welcome.timeout, welcome.retry) == (
        "critical",
        7,
        12.0,
        policy,
    )
    assert welcome.is_async and not build.is_async
    assert (build.queue, build.max_retries, build.timeout, build.retry) == (
        "default",
        3,
        None,
        DEFAULT_RETRY_POLICY,
    )
    assert welcome.__doc__ == "Send the welcome mail." and router.names == ["email:welcome", "report:build"]
    assert router.queues == ["critical", "default"]


def test_decorated_function_stays_callable() -> None:
    router = Router()

    @router.task("double")
    def double(job: Job) -> int:
        return int(job.payload) * 2

    now = datetime.now(UTC)
    job = Job(new_id(), "double", "default", 21, JobStatus.ACTIVE, 1, 3, 0, 5, now, now)
    assert double(job) == 42  # unit-test a handler without a worker


def test_handler_task_fills_only_unset_options() -> None:
    router = Router()

    @router.task("t", queue="low", max_retries=1, timeout=3)
    def t(job: Job) -> None: ...

    assert t.task({"a": 1}) == Task("t", {"a": 1}, queue="low", max_retries=1, timeout=3, priority=0)
    assert t.task(queue="critical", max_retries=0).to_spec().queue == "critical"
    assert t.task(max_retries=0).to_spec().max_retries == 0


def test_a_handler_priority_is_the_default_of_its_jobs() -> None:
    router = Router()

    @router.task("urgent", priority=40)
    def urgent(job: Job) -> None: ...

    assert urgent.task().to_spec().priority == 40
    assert urgent.task(priority=-5).to_spec().priority == -5
    assert urgent.task(priority=0).to_spec().priority == 0


@pytest.mark.parametrize(
    ("name", "options", "error"),
    [
        ("bad name!", {}, InvalidName),
        ("ok", {"queue": "no spaces"}, InvalidName),
        ("ok", {"max_retries": -1}, ConfigError),
        ("ok", {"timeout": 0}, ConfigError),
        ("ok", {"retry": 5}, ConfigError),
        ("ok", {"priority": 101}, ConfigError),
        ("ok", {"priority": True}, ConfigError),
    ],
)
def test_bad_registrations_are_refused(name: str, options: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        Router().task(name, **options)  # type: ignore[arg-type]


def test_a_type_registers_once_also_across_included_routers() -> None:
    main, emails = Router(), Router()

    @main.task("email:welcome")
    def one(job: Job) -> None: ...

    with pytest.raises(ConfigError, match="already registered"):

        @main.task("email:welcome")
        def two(job: Job) -> None: ...

    @emails.task("email:bye")
    def bye(job: Job) -> None: ...

    main.include(emails)
    assert main.get("email:bye") is bye
    with pytest.raises(ConfigError):
        main.include(emails)


def test_enqueue_without_a_dsn_says_how_to_give_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PQUEUE_DSN", raising=False)
    router = Router()

    @router.task("t")
    def t(job: Job) -> None: ...

    with pytest.raises(ConfigError, match="PQUEUE_DSN"):
        t.enqueue()


def test_dsn_comes_from_the_router_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PQUEUE_DSN", "memory://from-env")
    assert Router().dsn == "memory://from-env"
    assert Router("memory://explicit").dsn == "memory://explicit"
    router = Router()
    router.use_default("memory://worker")  # the worker's DSN fills a gap only
    assert router.dsn == "memory://worker"
    router.use_default("memory://other")
    assert router.dsn == "memory://worker"


def test_use_closes_the_client_the_router_made_but_not_one_it_was_given() -> None:
    router = Router("memory://router-use-1")
    made = router.client
    made.stats()
    router.use("memory://router-use-2")
    with pytest.raises(ClientClosed):
        made.stats()  # closed, its loop thread stopped
    given = Client("memory://router-use-3")
    try:
        router.use(given)
        router.use("memory://router-use-4")
        given.stats()  # still the caller's, still open
        kept = router.client
        router.use(kept)  # handing the router its own client makes it the caller's: not closed
        kept.stats()
        router.close()
        kept.stats()
        kept.close()
    finally:
        given.close()
        router.close()


def test_the_declared_options_are_the_handlers_attributes_and_router_task_keywords() -> None:
    """Each option marked Declared in JobOptions is what ``@router.task`` takes and what the
    handler holds under the same name (Handler.defaults and Handler.resolve read them so)."""
    router = Router()
    declared = {"queue": "low", "max_retries": 1, "timeout": 3.0, "priority": 5}
    assert set(declared) == set(DECLARED_OPTIONS)
    handler = router.task("t", **declared)(lambda job: None)  # type: ignore[arg-type]
    assert {name: getattr(handler, name) for name in DECLARED_OPTIONS} == declared
    assert set(RUN_TIME_OPTIONS) == {"max_retries", "timeout"} < set(DECLARED_OPTIONS)


def test_resolve_takes_what_the_producer_left_unset_from_the_handler() -> None:
    router = Router()

    @router.task("t", max_retries=1, timeout=3)
    def t(job: Job) -> None: ...

    now = datetime.now(UTC)
    stored = Job(new_id(), "t", "default", None, JobStatus.ACTIVE, 1, 3, 0, 5, now, now)
    assert t.resolve(stored) is stored  # no record (an older pqueue's job): as stored
    left = replace(stored, unset=frozenset({"max_retries", "timeout"}))
    assert (t.resolve(left).max_retries, t.resolve(left).timeout) == (1, 3.0)
    own_timeout = replace(stored, timeout=9.0, unset=frozenset({"max_retries"}))
    assert (t.resolve(own_timeout).max_retries, t.resolve(own_timeout).timeout) == (1, 9.0)
    future = replace(stored, unset=frozenset({"an_option_of_a_newer_pqueue"}))
    assert t.resolve(future) == future
