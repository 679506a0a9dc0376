"""A job's options are defined once (``pqueue.options.JobOptions``); every surface has them.

Each test fails when a surface misses an option of the definition: ``Task``, both
clients' ``enqueue`` and ``enqueue_map``, ``handler.enqueue``/``task``, the HTTP
``JobIn``, the ``pqueue enqueue`` flags and the Spark writer. A surface that does not
offer an option by design says so, with its reason, in its own table. The last tests
fail when ``Client`` and ``AsyncClient`` differ in a public method.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Unpack, get_type_hints

import pytest

from pqueue import AsyncClient, Client, EnqueueResult, Router, Task
from pqueue.cli import build_parser
from pqueue.cli.enqueue import FLAGS, flag_of, options_of
from pqueue.options import OPTION_NAMES, SHARED_OPTION_NAMES, JobOptions, SharedOptions, task_of
from pqueue.router import Handler
from pqueue.spark.options import JOB_OPTIONS, JOB_OPTIONS_NOT_OFFERED, WRITE_OPTIONS
from pqueue.web.api import to_task
from pqueue.web.models import JOB_IN_NOT_OFFERED, JobIn

SAMPLE: dict[str, Any] = {
    "queue": "mail",
    "delay": 30.0,
    "run_at": datetime(2030, 1, 1, tzinfo=UTC),
    "max_retries": 7,
    "timeout": 90.0,
    "unique_for": 600.0,
    "unique_until": "done",
    "meta": {"trace": "t-1"},
    "max_recoveries": 2,
    "priority": 7,
    "unique_key": "nightly",
    "idempotency_key": "r-1",
    "job_id": "01a21846-6f63-71c7-8a07-71f988ac91fe",
    "depends_on": ("01a21846-6f63-71c7-8a07-71f988ac91ff",),
    "on_parent_failure": "run",
    "limit_key": "acme",
    "rate": "20/s",
    "concurrency": 2,
}
"""A value other than the default for every option (unchecked: the surfaces carry, the
spec validates)."""

CLI_TEXT = {
    "delay": "30s",
    "run_at": "2030-01-01T00:00:00Z",
    "timeout": "90s",
    "unique_for": "10m",
    "meta": "trace=t-1",
    "depends_on": SAMPLE["depends_on"][0],
}
"""How the command line spells a sample value that is not its ``str``."""

TASK_FIELDS = {f.name for f in dataclasses.fields(Task)} - {"type", "payload"}


def carried(task: Task, names: tuple[str, ...] | list[str] = OPTION_NAMES) -> dict[str, Any]:
    """The options of ``task`` that differ from what was asked (empty: all carried)."""
    return {name: getattr(task, name) for name in names if getattr(task, name) != SAMPLE[name]}


def test_the_sample_gives_every_option_a_value() -> None:
    assert list(SAMPLE) == list(OPTION_NAMES)


def test_task_has_one_field_per_option() -> None:
    assert set(OPTION_NAMES) == TASK_FIELDS
    task = Task("report:build", None, **SAMPLE)
    assert carried(task) == {}


@pytest.mark.parametrize(
    ("function", "options"),
    [
        (AsyncClient.enqueue, JobOptions),
        (Client.enqueue, JobOptions),
        (Handler.enqueue, JobOptions),
        (Handler.enqueue_async, JobOptions),
        (Handler.task, JobOptions),
        (AsyncClient.enqueue_map, SharedOptions),
        (Client.enqueue_map, SharedOptions),
    ],
    ids=lambda value: getattr(value, "__qualname__", ""),
)
def test_enqueue_takes_the_options_as_one_typed_keyword_set(
    function: Callable[..., Any], options: type
) -> None:
    params = inspect.signature(function).parameters
    keywords = [p for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    assert [p.name for p in keywords] == ["options"]
    assert get_type_hints(function)["options"] == Unpack[options]
    spelled = set(params) & set(OPTION_NAMES)
    assert not spelled, f"{function.__qualname__} spells options of its own: {spelled}"


def test_enqueue_map_shares_the_options_that_can_be_shared() -> None:
    assert set(SHARED_OPTION_NAMES) <= set(OPTION_NAMES)
    assert set(SharedOptions.__annotations__) == set(SHARED_OPTION_NAMES)


async def test_async_client_enqueue_carries_every_option(monkeypatch: pytest.MonkeyPatch) -> None:
    client = AsyncClient("memory://parity-async")
    sent: list[Task] = []

    async def enqueue_many(tasks: list[Task]) -> list[EnqueueResult]:
        sent.extend(tasks)
        return [EnqueueResult(task.job_id or "", True) for task in tasks]

    monkeypatch.setattr(client, "enqueue_many", enqueue_many)
    await client.enqueue("report:build", {"n": 1}, **SAMPLE)
    assert carried(sent[0]) == {} and sent[0].payload == {"n": 1}
    with pytest.raises(TypeError, match="colour"):
        await client.enqueue("report:build", colour="red")  # type: ignore[call-arg]


def test_sync_client_enqueue_carries_every_option(monkeypatch: pytest.MonkeyPatch) -> None:
    with Client("memory://parity-sync") as client:
        sent: list[Task] = []

        def enqueue_task(task: Task) -> EnqueueResult:
            sent.append(task)
            return EnqueueResult(task.job_id or "", True)

        monkeypatch.setattr(client, "enqueue_task", enqueue_task)
        client.enqueue("report:build", {"n": 1}, **SAMPLE)
        assert carried(sent[0]) == {} and sent[0].payload == {"n": 1}
        with pytest.raises(TypeError, match="colour"):
            client.enqueue_map("report:build", [1], colour="red")  # type: ignore[call-arg]


def test_handler_task_carries_every_option() -> None:
    router = Router()

    @router.task("report:build")
    def build(job: object) -> None: ...

    assert carried(build.task({"n": 1}, **SAMPLE)) == {}


def test_router_task_defaults_are_options_of_the_same_name() -> None:
    params = set(inspect.signature(Router.task).parameters) - {"self", "name"}
    handler_only = {"retry": "a retry policy is code, so it lives with the handler"}
    assert params - set(handler_only) <= set(OPTION_NAMES)


def test_http_job_in_has_every_option_or_says_why_not() -> None:
    fields = set(JobIn.model_fields) - {"type", "payload"}
    assert not fields & set(JOB_IN_NOT_OFFERED)
    assert fields | set(JOB_IN_NOT_OFFERED) == set(OPTION_NAMES), "JobIn misses an option"
    assert to_task(JobIn(type="report:build")) == Task("report:build"), "JobIn has other defaults"
    body = {**SAMPLE, "run_at": "2030-01-01T00:00:00Z", "depends_on": list(SAMPLE["depends_on"])}
    job = JobIn.model_validate({"type": "report:build", **{name: body[name] for name in fields}})
    assert carried(to_task(job), sorted(fields)) == {}


def test_cli_has_a_flag_for_every_option() -> None:
    assert set(FLAGS) == set(OPTION_NAMES), "pqueue enqueue misses a flag"
    argv = ["enqueue", "report:build"]
    for name, value in SAMPLE.items():
        argv += [flag_of(name), CLI_TEXT.get(name, str(value))]
    args = build_parser().parse_args(argv)
    assert carried(task_of("report:build", None, options_of(args))) == {}
    assert options_of(build_parser().parse_args(["enqueue", "report:build"])) == {}, "a flag has a default"


def test_spark_writer_has_every_option_or_says_why_not() -> None:
    assert not set(JOB_OPTIONS) & set(JOB_OPTIONS_NOT_OFFERED)
    assert set(JOB_OPTIONS) | set(JOB_OPTIONS_NOT_OFFERED) == set(OPTION_NAMES), "the writer misses an option"
    unknown = {name: option for name, option in JOB_OPTIONS.items() if option.lower() not in WRITE_OPTIONS}
    assert unknown == {}


# -- the two clients ------------------------------------------------------------------

ONLY_SYNC = {
    "enqueue_task_async": "awaitable from another event loop (handler.enqueue_async); AsyncClient's are",
    "result_async": "awaitable from another event loop; AsyncClient.result is awaitable already",
    "wait_job_async": "awaitable from another event loop; AsyncClient.wait_job is awaitable already",
}
ONLY_ASYNC = {
    "broker": "the broker is async and belongs to the client's loop; a sync caller cannot use it",
}
OWN_SIGNATURE = {
    "close": "Client.close(grace=) bounds how long calls on other threads may finish",
}


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_the_clients_have_the_same_public_methods() -> None:
    assert public(Client) - public(AsyncClient) == set(ONLY_SYNC)
    assert public(AsyncClient) - public(Client) == set(ONLY_ASYNC)


@pytest.mark.parametrize("name", sorted(public(Client) & public(AsyncClient) - set(OWN_SIGNATURE)))
def test_the_clients_take_the_same_arguments(name: str) -> None:
    sync, async_ = getattr(Client, name), getattr(AsyncClient, name)
    if isinstance(sync, property):
        assert isinstance(async_, property)
        return

    def shape(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert shape(sync) == shape(async_)
    assert get_type_hints(sync).get("options") == get_type_hints(async_).get("options")
