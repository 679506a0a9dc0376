"""The worker runtime: :class:`Worker` and what it is built from."""

from pqueue.errors import UnknownJobType
from pqueue.worker.config import UnknownTypePolicy, WorkerSettings
from pqueue.worker.settle import WorkerCounters
from pqueue.worker.threads import JobTimeout
from pqueue.worker.worker import Worker

__all__ = ["Worker", "WorkerSettings", "WorkerCounters", "UnknownTypePolicy", "UnknownJobType", "JobTimeout"]
