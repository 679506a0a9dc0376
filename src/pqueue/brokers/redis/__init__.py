"""The Redis backend (``redis://``, ``rediss://``); needs ``pip install 'pqueue[redis]'``."""

from pqueue.brokers.redis.broker import RedisBroker

__all__ = ["RedisBroker"]
