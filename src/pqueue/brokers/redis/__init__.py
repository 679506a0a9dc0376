"""The Redis backend (``redis://``, ``rediss://``); needs ``pip install 'pqueue-jobs[redis]'``."""

from pqueue.brokers.redis.broker import RedisBroker

__all__ = ["RedisBroker"]
