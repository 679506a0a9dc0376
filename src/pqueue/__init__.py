"""pqueue: typed background jobs on Redis, Postgres, SQLite or memory, with one contract for all.

The public API is re-exported here; everything else is an implementation detail.
"""

from pqueue.broker import Broker, Capability, FullBroker, IdempotencyState, Inspector, WorkerInfo
from pqueue.brokers import connect
from pqueue.client import AsyncClient, Stats
from pqueue.clock import Clock, ManualClock, SystemClock
from pqueue.errors import (
    BrokerError,
    BrokerUnavailable,
    BrokerUnreachable,
    BrokerUnusable,
    ClientClosed,
    ConfigError,
    CorruptJob,
    InvalidJob,
    InvalidName,
    InvalidOption,
    InvalidPayload,
    InvalidRequest,
    JobCancelled,
    JobFailed,
    JobNotFound,
    LeaseLost,
    NestedTransaction,
    NotReplicated,
    NotSupported,
    PayloadTooLarge,
    PQueueError,
    ResultTimeout,
    Retry,
    SchemaError,
    ServerConfigError,
    SkipRetry,
    UnknownJobType,
)
from pqueue.job import EnqueueResult, ErrorInfo, Job, JobSpec, JobStatus, Lease
from pqueue.middleware import JobReport, Middleware, Outcome
from pqueue.options import JobOptions
from pqueue.priority import QueueSelection
from pqueue.retry import ConstantBackoff, ExponentialBackoff, LinearBackoff, RetryPolicy
from pqueue.router import Handler, Router
from pqueue.spec import build_spec
from pqueue.sync import Client
from pqueue.task import Task
from pqueue.worker import JobTimeout, UnknownTypePolicy, Worker, WorkerCounters
from pqueue.workflow import Chain, Chord, Group, Workflow, chain, chord, group

__version__ = "0.1.0.dev0"

__all__ = [
    "Router",
    "Handler",
    "Task",
    "JobOptions",
    "chain",
    "group",
    "chord",
    "Workflow",
    "Chain",
    "Group",
    "Chord",
    "Client",
    "AsyncClient",
    "Stats",
    "Worker",
    "WorkerCounters",
    "UnknownTypePolicy",
    "JobTimeout",
    "Middleware",
    "JobReport",
    "Outcome",
    "connect",
    "Broker",
    "Inspector",
    "FullBroker",
    "Capability",
    "IdempotencyState",
    "WorkerInfo",
    "Job",
    "JobSpec",
    "JobStatus",
    "Lease",
    "EnqueueResult",
    "ErrorInfo",
    "build_spec",
    "QueueSelection",
    "RetryPolicy",
    "ExponentialBackoff",
    "ConstantBackoff",
    "LinearBackoff",
    "Clock",
    "SystemClock",
    "ManualClock",
    "PQueueError",
    "ConfigError",
    "InvalidJob",
    "InvalidPayload",
    "PayloadTooLarge",
    "InvalidName",
    "InvalidOption",
    "UnknownJobType",
    "InvalidRequest",
    "JobNotFound",
    "JobFailed",
    "JobCancelled",
    "ResultTimeout",
    "LeaseLost",
    "NestedTransaction",
    "NotSupported",
    "BrokerError",
    "BrokerUnavailable",
    "BrokerUnreachable",
    "NotReplicated",
    "BrokerUnusable",
    "ClientClosed",
    "SchemaError",
    "ServerConfigError",
    "CorruptJob",
    "SkipRetry",
    "Retry",
]
