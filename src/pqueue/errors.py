"""The one exception tree of pqueue.

Every error pqueue raises derives from :class:`PQueueError`, so callers can catch
"anything pqueue" in one clause. A class's docstring is its default message.
Driver errors (redis-py, psycopg) are translated into these at the backend edge.
"""

from __future__ import annotations

from datetime import datetime, timedelta


class PQueueError(Exception):
    """A pqueue operation failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


class ConfigError(PQueueError, ValueError):
    """The configuration is invalid (a bad DSN, an unknown scheme, a bad option)."""


class InvalidJob(PQueueError, ValueError):
    """The job was refused at enqueue; nothing was written."""


class InvalidPayload(InvalidJob):
    """The payload is not a JSON value (dict, list, str, int, float, bool or None)."""


class PayloadTooLarge(InvalidJob):
    """The encoded payload is larger than the configured limit."""


class InvalidName(InvalidJob):
    """A queue name, job type, key or meta entry does not match the allowed pattern."""


class InvalidOption(InvalidJob):
    """An enqueue option is out of range (a negative delay, a zero TTL, ...)."""


class UnknownJobType(InvalidJob, LookupError):
    """No handler is registered for this job type.

    Raised at enqueue by a client that was given the router (nothing is stored), and
    recorded by a worker that holds a job it has no handler for.
    """


class InvalidRequest(PQueueError, ValueError):
    """An inspect or admin call got an argument out of range (a bad status, page size or offset)."""


class JobNotFound(PQueueError, LookupError):
    """No job with this id exists (it never did, or it was pruned)."""


class ClientClosed(PQueueError, RuntimeError):
    """The client is closed: the call was refused, or cancelled because close() ran out of patience."""


class LeaseLost(PQueueError):
    """The lease is no longer current: the job was recovered and may run elsewhere."""


class NestedTransaction(PQueueError, RuntimeError):
    """``job.transaction()`` was entered while another block of the same job is open: a job
    completes once, in one transaction. Raised at the entry, before anything is written."""


class NotSupported(PQueueError, NotImplementedError):
    """The backend does not offer this: ``capability`` names the missing
    :class:`~pqueue.broker.Capability` (e.g. ``transactional_completion``)."""

    def __init__(self, message: str | None = None, *, capability: str = "") -> None:
        super().__init__(message)
        self.capability = capability


class BrokerError(PQueueError):
    """The broker failed to carry out an operation."""


class BrokerUnavailable(BrokerError, ConnectionError):
    """The broker's server cannot be reached; the operation may be retried."""


class BrokerUnreachable(BrokerUnavailable):
    """The broker's server could not be reached (connection refused, authentication failed,
    timeout, TLS, ...): ``address`` is its host:port, ``cause`` the short reason."""

    def __init__(self, message: str | None = None, *, address: str = "", cause: str = "") -> None:
        super().__init__(message)
        self.address = address
        self.cause = cause


class NotReplicated(BrokerUnavailable):
    """Written on the master, but fewer of its replicas than ``wait_replicas`` asked for
    confirmed the write in time (Redis). Nothing is undone: ``job_ids`` names the jobs
    written (a retry with the same ``job_id`` stores nothing twice; as an
    ``idempotency_key``, a copy is acked without running); ``wanted`` and ``confirmed``
    are the replica counts."""

    def __init__(
        self,
        message: str | None = None,
        *,
        job_ids: tuple[str, ...] = (),
        wanted: int = 0,
        confirmed: int = 0,
    ) -> None:
        super().__init__(message)
        self.job_ids = job_ids
        self.wanted = wanted
        self.confirmed = confirmed


class ServerConfigError(BrokerError):
    """The broker's server is set up in a way that can lose jobs (e.g. a Redis
    ``maxmemory-policy`` other than ``noeviction``): ``setting`` names it, ``value`` is
    what it is now."""

    def __init__(self, message: str | None = None, *, setting: str = "", value: str = "") -> None:
        super().__init__(message)
        self.setting = setting
        self.value = value


class BrokerUnusable(BrokerError):
    """The broker's storage is in a state retrying cannot heal (a corrupt SQLite file, a
    schema missing, dropped or newer than this pqueue): an operator must act. A worker
    that meets it logs one ERROR and exits with :data:`EXIT_BROKER_UNUSABLE` (docs/worker.md)."""


EXIT_BROKER_UNUSABLE = 3
"""The exit code of a worker (or a pool of them) stopped by :class:`BrokerUnusable` (0 is a
drain, 1 a failed start, 2 bad flags, 128 + N a second signal N)."""


class SchemaError(BrokerUnusable):
    """The broker's storage schema is missing or newer than this version knows."""


class CorruptJob(BrokerError):
    """A job found in storage is malformed and cannot be decoded."""


class JobFailed(PQueueError):
    """The job is dead: its handler failed past its retries (``error`` is the last failure).

    Raised by ``client.result()``; ``job_id`` names the job, ``error`` is its last
    :class:`~pqueue.job.ErrorInfo` (kind, message, traceback, attempt)."""

    def __init__(self, job_id: str, error: object) -> None:
        super().__init__(f"job {job_id} is dead: {error}")
        self.job_id = job_id
        self.error = error


class JobCancelled(PQueueError):
    """The job was cancelled (by an admin, or because a parent it depended on died)."""

    def __init__(self, job_id: str, error: object = None) -> None:
        reason = f": {error}" if error is not None else ""
        super().__init__(f"job {job_id} was cancelled{reason}")
        self.job_id = job_id
        self.error = error


class ResultTimeout(PQueueError, TimeoutError):
    """``client.result()`` gave up: the job had not finished within the timeout."""


class HandlerControl(Exception):
    """Base of the exceptions a handler raises to steer its job's fate."""


class SkipRetry(HandlerControl):
    """Raised by a handler: do not retry, dead-letter the job now."""


class Retry(HandlerControl):
    """Raised by a handler: retry the job after ``after`` seconds (or at a datetime)."""

    def __init__(self, after: float | timedelta | datetime = 0.0, message: str = "") -> None:
        super().__init__(message or f"retry requested after {after!r}")
        self.after = after
