"""The handler registry: ``Router`` maps job types to the functions that run them.

Handlers are found only by the names registered here; a job's type is never imported
as a module path, so a message cannot make a worker run arbitrary code. (The one
subclass that imports, ``pqueue.django.worker.TaskRouter``, takes only Django tasks
from the project's installed apps: ADR 0146.) The object
``@router.task(...)`` returns keeps the function callable as before and adds
``enqueue``/``enqueue_async`` with the task's defaults.
"""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Unpack

from pqueue.errors import ConfigError, InvalidOption, UnknownJobType
from pqueue.job import EnqueueResult, Job, JSONValue, job_with
from pqueue.limits import QUEUE_GROUP, KeyFn, Limit, LimitRule
from pqueue.options import DECLARED_OPTIONS, RUN_TIME_OPTIONS, JobOptions, task_of
from pqueue.periodic import Schedule
from pqueue.retry import DEFAULT_RETRY_POLICY, RetryPolicy
from pqueue.spec import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    validate_job_type,
    validate_priority,
    validate_queue_name,
)
from pqueue.suggest import did_you_mean
from pqueue.task import Task

if TYPE_CHECKING:
    from pqueue.sync import Client

HandlerFn = Callable[[Job], Any]
"""A sync ``def`` or an ``async def`` taking the :class:`~pqueue.job.Job`."""

DSN_ENV = "PQUEUE_DSN"
MAX_NAMES_SHOWN = 20
"""Registered types an :class:`~pqueue.errors.UnknownJobType` message lists at most."""


class Handler:
    """A registered job type: its function, its defaults, and enqueue shortcuts."""

    def __init__(
        self,
        router: Router,
        name: str,
        fn: HandlerFn,
        *,
        queue: str,
        max_retries: int,
        timeout: float | None,
        retry: RetryPolicy,
        limit: LimitRule | None = None,
        priority: int = DEFAULT_PRIORITY,
    ) -> None:
        self.router = router
        self.limit = limit
        """The task's own rate/concurrency rule, or None (docs/limits.md)."""
        self.name = name
        self.fn = fn
        self.queue = queue
        self.max_retries = max_retries
        self.timeout = timeout
        self.priority = priority
        """The priority of this type's jobs that set none (docs/priority.md)."""
        self.retry = retry
        self.is_async = _is_async(fn)
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, job: Job) -> Any:
        """Call the function directly (unit tests of a handler need no worker)."""
        return self.fn(job)

    def __repr__(self) -> str:
        return f"<pqueue handler {self.name!r} -> {getattr(self.fn, '__qualname__', self.fn)!r}>"

    def task(self, payload: JSONValue = None, **options: Unpack[JobOptions]) -> Task:
        """A :class:`Task` of this type with this handler's defaults (for ``enqueue_many``);
        ``options`` are :class:`~pqueue.options.JobOptions`."""
        return self.defaults(task_of(self.name, payload, options))

    def defaults(self, task: Task) -> Task:
        """``task`` with its unset declared options (:data:`~pqueue.options.DECLARED_OPTIONS`:
        queue, max_retries, timeout, priority) taken from this handler: what a producer with
        the router does."""
        missing = {name: getattr(self, name) for name in DECLARED_OPTIONS if getattr(task, name) is None}
        return replace(task, **missing) if missing else task

    def resolve(self, job: Job) -> Job:
        """``job`` with the run-time options its producer left unset (``job.unset``) taken
        from this handler: what the worker runs. The job's own value comes first, then this
        handler's declaration, then the default (ADR 0157). A job stored without the record
        (an older pqueue's) keeps its stored values."""
        if not job.unset:
            return job
        declared = {name: getattr(self, name) for name in RUN_TIME_OPTIONS if name in job.unset}
        return job_with(job, declared) if declared else job

    def enqueue(self, payload: JSONValue = None, **options: Unpack[JobOptions]) -> EnqueueResult:
        """Enqueue a job of this type through the router's client (blocking)."""
        return self.router.client.enqueue_task(self.task(payload, **options))

    async def enqueue_async(self, payload: JSONValue = None, **options: Unpack[JobOptions]) -> EnqueueResult:
        """Enqueue a job of this type without blocking the running event loop."""
        return await self.router.client.enqueue_task_async(self.task(payload, **options))


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def _timeout_seconds(timeout: float | timedelta | None) -> float | None:
    if timeout is None:
        return None
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise ConfigError(f"timeout must be a number of seconds > 0 or a timedelta, got {timeout!r}")
    return float(seconds)


class Router:
    """Job types and their handlers; give it to a :class:`~pqueue.worker.Worker`.

    ``dsn`` (or ``PQUEUE_DSN``) is where ``handler.enqueue()`` sends jobs; a worker
    running this router fills it in with its own DSN when none was given.
    """

    def __init__(self, dsn: str | None = None) -> None:
        self._handlers: dict[str, Handler] = {}
        self._schedules: dict[str, Schedule] = {}
        self._queue_limits: dict[str, LimitRule] = {}
        self._dsn = dsn
        self._client: Client | None = None
        self._owns_client = False
        self._lock = threading.Lock()

    def task(
        self,
        name: str,
        *,
        queue: str = DEFAULT_QUEUE,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float | timedelta | None = None,
        retry: RetryPolicy | None = None,
        rate: str | None = None,
        concurrency: int | None = None,
        limit_key: KeyFn | str | None = None,
        priority: int = DEFAULT_PRIORITY,
    ) -> Callable[[HandlerFn], Handler]:
        """Register the decorated function as the handler of job type ``name``.

        ``priority`` (-100..100, default 0) is the priority of its jobs that set none:
        within a queue, higher runs sooner (docs/priority.md).

        ``rate`` (``"100/s"``, ``"30/m"``, ``"500/h"``) and ``concurrency`` limit how fast
        and how many of its jobs run, across every worker, per ``limit_key(payload)``
        group (one group for the task without it); see docs/limits.md.
        """
        validate_job_type(name)
        limit = LimitRule.build(rate, concurrency, limit_key, default_key=name)
        validate_queue_name(queue)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigError(f"max_retries must be an int >= 0, got {max_retries!r}")
        seconds = _timeout_seconds(timeout)
        try:
            validate_priority(priority)
        except InvalidOption as exc:
            raise ConfigError(str(exc)) from None
        if retry is not None and not callable(retry):
            raise ConfigError(
                f"retry must be a policy callable (attempt, error, job) -> seconds, got {retry!r}"
            )

        def register(fn: HandlerFn) -> Handler:
            if not callable(fn):
                raise ConfigError(f"@task({name!r}) must decorate a function, got {fn!r}")
            handler = Handler(
                self,
                name,
                fn,
                queue=queue,
                max_retries=max_retries,
                timeout=seconds,
                retry=retry or DEFAULT_RETRY_POLICY,
                limit=limit,
                priority=priority,
            )
            self._add(handler)
            return handler

        return register

    def periodic(
        self,
        cron: str | None = None,
        *,
        every: timedelta | float | None = None,
        tz: str = "UTC",
        name: str | None = None,
        payload: JSONValue = None,
        queue: str | None = None,
        missed: str | None = None,
        catch_up: int = 0,
    ) -> Callable[[Handler | HandlerFn], Handler]:
        """Enqueue the decorated task on a schedule: a 5-field ``cron`` expression read in
        time zone ``tz``, or ``every`` (a timedelta or seconds). Decorate a ``@router.task``
        handler, or a plain function (then registered as job type ``name``, by default its
        ``__name__``). ``name`` also names the schedule (default: the job type); give each
        schedule of one task its own. Ticks missed while no worker ran are skipped, or with
        ``catch_up=N`` the newest N run at once (``missed`` is ``"skip"`` or ``"catch_up"``).
        Every worker running this router runs the schedule; each tick is enqueued once.
        docs/periodic.md has the details (time zones and DST, deploys)."""

        def register(target: Handler | HandlerFn) -> Handler:
            if isinstance(target, Handler):
                if self._handlers.get(target.name) is not target:
                    raise ConfigError(f"@periodic: handler {target.name!r} belongs to another router")
                handler = target
            else:
                if not callable(target):
                    raise ConfigError(f"@periodic must decorate a function or a task, got {target!r}")
                job_type = str(name or getattr(target, "__name__", ""))
                handler = self.task(job_type, queue=queue or DEFAULT_QUEUE)(target)
            schedule = Schedule.build(
                name or handler.name,
                handler.name,
                queue or handler.queue,
                cron=cron,
                every=every,
                tz=tz,
                missed=missed,
                catch_up=catch_up,
                payload=payload,
                max_retries=handler.max_retries,
                timeout=handler.timeout,
            )
            self._add_schedule(schedule)
            return handler

        if queue is not None:
            validate_queue_name(queue)
        return register

    def _add_schedule(self, schedule: Schedule) -> None:
        if schedule.name in self._schedules:
            raise ConfigError(f"a schedule named {schedule.name!r} is already registered; pass name=")
        self._schedules[schedule.name] = schedule

    @property
    def schedules(self) -> list[Schedule]:
        """The schedules of this router's periodic tasks, by name (what its workers run)."""
        return [self._schedules[name] for name in sorted(self._schedules)]

    def queue(
        self,
        name: str,
        *,
        rate: str | None = None,
        concurrency: int | None = None,
        limit_key: KeyFn | str | None = None,
    ) -> None:
        """Limit every job enqueued to queue ``name`` (whatever its type) that its task does
        not limit itself: ``rate`` and ``concurrency`` per ``limit_key(payload)`` group, or
        for the whole queue without it (docs/limits.md).

        Raises :class:`~pqueue.errors.ConfigError` for a bad rule, or when the queue
        already has one.
        """
        validate_queue_name(name)
        rule = LimitRule.build(rate, concurrency, limit_key, default_key=QUEUE_GROUP)
        if name in self._queue_limits:
            raise ConfigError(f"queue {name!r} already has limits")
        if rule is None:
            raise ConfigError(f"router.queue({name!r}) needs rate= and/or concurrency=")
        self._queue_limits[name] = rule

    def limit_for(self, handler: Handler | None, task: Task) -> Limit | None:
        """The limit a job of ``task`` carries under this router's rules, or None (then the
        task's own ``rate``/``concurrency``, if any, apply). The task's rule comes first,
        then its queue's; ``task.limit_key`` replaces the rule's key."""
        if task.rate is not None or task.concurrency is not None:
            return None
        rule = self.rule_for(handler, task.queue)
        return None if rule is None else rule.resolve(task.payload, task.limit_key)

    def rule_for(self, handler: Handler | None, queue: str | None) -> LimitRule | None:
        """The limit rule of ``handler``'s jobs on ``queue``: the task's, else the queue's."""
        rule = handler.limit if handler is not None else None
        if rule is None and queue is not None:
            rule = self._queue_limits.get(queue)
        return rule

    def _add(self, handler: Handler) -> None:
        if handler.name in self._handlers:
            raise ConfigError(
                f"job type {handler.name!r} is already registered to {self._handlers[handler.name]}"
            )
        self._handlers[handler.name] = handler

    def include(self, other: Router) -> None:
        """Register every handler and schedule of ``other`` here too (split big apps into modules)."""
        for handler in other:
            self._add(handler)
        for schedule in other.schedules:
            self._add_schedule(schedule)
        for queue, rule in other._queue_limits.items():
            self._queue_limits.setdefault(queue, rule)

    def get(self, name: str) -> Handler | None:
        """The handler of job type ``name``, or None (the worker's lookup)."""
        return self._handlers.get(name)

    def missing_reason(self, name: str) -> str | None:
        """Why job type ``name`` has no handler, when a router that finds handlers on demand
        knows (``pqueue.django``'s import error); the worker puts it in the job's error."""
        return None

    def handler_for(self, name: str) -> Handler:
        """The handler of job type ``name``; the producer's check that the type exists.

        A client given this router calls it for every job it enqueues, so a typo such as
        ``"email:welcom"`` is refused before anything is stored instead of bouncing
        between workers that have no handler for it (ADR 0022).

        Raises :class:`~pqueue.errors.UnknownJobType` naming the closest registered type.
        """
        handler = self._handlers.get(name)
        if handler is None:
            raise UnknownJobType(self._unknown_message(name))
        return handler

    def _unknown_message(self, name: object) -> str:
        names = self.names
        hint = did_you_mean(name, names)
        shown = ", ".join(repr(n) for n in names[:MAX_NAMES_SHOWN]) or "none"
        if len(names) > MAX_NAMES_SHOWN:
            shown += f", ... ({len(names)} in all)"
        return (
            f"job type {name!r} is not registered in this client's router"
            f"{'; ' + hint if hint else ''} (registered: {shown}); nothing was enqueued. "
            "A client made without router= enqueues any type."
        )

    def __contains__(self, name: object) -> bool:
        return name in self._handlers

    def __iter__(self) -> Iterator[Handler]:
        return iter(list(self._handlers.values()))

    def __len__(self) -> int:
        return len(self._handlers)

    @property
    def names(self) -> list[str]:
        return sorted(self._handlers)

    @property
    def queues(self) -> list[str]:
        """The queues this router's handlers enqueue to by default."""
        return sorted({h.queue for h in self._handlers.values()})

    # -- where handler.enqueue() sends jobs -----------------------------------------

    @property
    def dsn(self) -> str | None:
        return self._dsn or os.environ.get(DSN_ENV) or None

    def use(self, target: str | Client) -> None:
        """Send ``handler.enqueue()`` jobs to this DSN or through this :class:`~pqueue.Client`.

        A client the router made itself (:attr:`client`) is closed first; a client given
        here stays the caller's to close.
        """
        from pqueue.sync import Client

        with self._lock:
            previous, owned = self._client, self._owns_client
            if isinstance(target, Client):
                self._client, self._dsn = target, target.dsn
            else:
                self._dsn, self._client = target, None
            self._owns_client = False
        if previous is not None and owned and previous is not target:
            previous.close()

    def use_default(self, dsn: str) -> None:
        """Adopt ``dsn`` unless a DSN was already chosen (a worker calls this with its own)."""
        with self._lock:
            if self._dsn is None and self._client is None:
                self._dsn = dsn

    @property
    def client(self) -> Client:
        """The :class:`~pqueue.Client` behind ``handler.enqueue()``, made on first use."""
        from pqueue.sync import Client

        with self._lock:
            if self._client is None:
                dsn = self._dsn or os.environ.get(DSN_ENV)
                if not dsn:
                    raise ConfigError(
                        f"no DSN to enqueue to: pass Router(dsn=...), call router.use(dsn) or set {DSN_ENV}"
                    )
                self._client, self._owns_client = Client(dsn, router=self), True
            return self._client

    def close(self) -> None:
        """Close the client :attr:`client` made, if any (a client given to :meth:`use` is the caller's)."""
        with self._lock:
            client, owned = self._client, self._owns_client
            if owned:
                self._client, self._owns_client = None, False
        if client is not None and owned:
            client.close()
