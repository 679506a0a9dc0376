"""The errors of :mod:`pqueue.rsmq`, under pqueue's one root (:class:`~pqueue.errors.PQueueError`).

RSMQ's reference client reports errors by name (``queueNotFound``, ``queueExists``,
``messageTooLong``, and ``invalidFormat``/``invalidValue``/``messageNotString``/
``missingParameter``/``noAttributeSupplied`` for bad input); here each is a class, and
every bad-input name is one :class:`InvalidArgument`. Each message is one line naming
the value. An unreachable server raises :class:`~pqueue.errors.BrokerUnreachable`, as
everywhere in pqueue.
"""

from __future__ import annotations

from pqueue.errors import PQueueError


class RsmqError(PQueueError):
    """An RSMQ operation failed."""


class QueueNotFound(RsmqError, LookupError):
    """The RSMQ queue does not exist (``queueNotFound``)."""


class QueueExists(RsmqError):
    """An RSMQ queue of that name exists already (``queueExists``)."""


class MessageTooLong(RsmqError, ValueError):
    """The message is longer than the queue's ``maxsize`` (``messageTooLong``); nothing was sent."""


class InvalidArgument(RsmqError, ValueError):
    """A queue name, id, vt, delay, maxsize or message is not what RSMQ accepts; nothing was written."""


__all__ = ["InvalidArgument", "MessageTooLong", "QueueExists", "QueueNotFound", "RsmqError"]
