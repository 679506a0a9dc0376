"""Every RSMQ operation, written once as steps (:mod:`pqueue.steps`).

An operation checks its input (bad input raises before anything is sent), yields one
request -- a script call or a plain command -- and turns the reply into RSMQ's result or
error. :class:`~pqueue.rsmq.Rsmq` drives these blocking and
:class:`~pqueue.rsmq.AsyncRsmq` awaited (ADR 0136's rule: one implementation, two
transports). All rules live here and in ``lua/``; the clients only do I/O.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pqueue.rsmq import validation as check
from pqueue.rsmq.errors import InvalidArgument, MessageTooLong, QueueExists, QueueNotFound
from pqueue.rsmq.ids import random_part, sent_ms
from pqueue.rsmq.keys import Keys
from pqueue.rsmq.model import QueueAttributes, RsmqMessage

Arg = str | int


@dataclass(frozen=True, slots=True)
class Script:
    """Call script ``name`` (:mod:`pqueue.rsmq.scripts`) with these keys and arguments."""

    name: str
    keys: tuple[str, ...]
    args: tuple[Arg, ...]


@dataclass(frozen=True, slots=True)
class Command:
    """Send one plain Redis command."""

    args: tuple[Arg, ...]


Request = Script | Command
T = TypeVar("T")
Op = Generator[Request, Any, T]
"""An operation: yields requests, is sent their replies, returns its ``T``."""

OK, NOT_FOUND, TOO_LONG, EXISTS = 0, 1, 2, 3
"""The status every script's reply starts with (``lua/_lib.lua``)."""

DEAD_SUFFIX = "-dead"
"""A consumer's dead queue is ``{qname}-dead``: an RSMQ queue name, readable by any client."""


def dead_queue(qname: str) -> str:
    """The dead queue of ``qname`` (checked: the name must still fit in 160 characters)."""
    return check.qname(check.qname(qname) + DEAD_SUFFIX)


def _found(reply: Sequence[Any], keys: Keys, qname: str) -> Sequence[Any]:
    if int(reply[0]) == NOT_FOUND:
        raise QueueNotFound(f"queue {qname!r} not found in namespace {keys.ns!r}")
    return reply


def _qkeys(keys: Keys, qname: str) -> tuple[str, str]:
    return keys.messages(qname), keys.queue(qname)


def create_queue(keys: Keys, qname: str, vt: int, delay: int, maxsize: int) -> Op[None]:
    qname = check.qname(qname)
    args = (qname, check.seconds("vt", vt), check.seconds("delay", delay), check.maxsize(maxsize))
    reply = yield Script("create_queue", (keys.queue(qname), keys.queues), args)
    if int(reply[0]) == EXISTS:
        raise QueueExists(f"queue {qname!r} exists already in namespace {keys.ns!r}")


def list_queues(keys: Keys) -> Op[list[str]]:
    reply = yield Command(("SMEMBERS", keys.queues))
    return sorted(str(name) for name in reply)


def delete_queue(keys: Keys, qname: str) -> Op[None]:
    qname = check.qname(qname)
    reply = yield Script("delete_queue", (*_qkeys(keys, qname), keys.queues), (qname,))
    _found(reply, keys, qname)


def _attributes(reply: Sequence[Any]) -> QueueAttributes:
    return QueueAttributes(*(int(value) for value in reply[1:10]))


def get_queue_attributes(keys: Keys, qname: str) -> Op[QueueAttributes]:
    qname = check.qname(qname)
    reply = yield Script("attributes", _qkeys(keys, qname), ())
    return _attributes(_found(reply, keys, qname))


def set_queue_attributes(
    keys: Keys, qname: str, vt: int | None, delay: int | None, maxsize: int | None
) -> Op[QueueAttributes]:
    qname = check.qname(qname)
    if vt is None and delay is None and maxsize is None:
        raise InvalidArgument(f"set_queue_attributes({qname!r}): give at least one of vt, delay, maxsize")
    args = (
        "" if vt is None else check.seconds("vt", vt),
        "" if delay is None else check.seconds("delay", delay),
        "" if maxsize is None else check.maxsize(maxsize),
    )
    reply = yield Script("set_attributes", _qkeys(keys, qname), args)
    return _attributes(_found(reply, keys, qname))


def send_message(keys: Keys, qname: str, message: str, delay: int | None, realtime: bool) -> Op[str]:
    qname = check.qname(qname)
    body = check.message(message)
    size = check.length(body)
    args = (
        body,
        size,
        "" if delay is None else check.seconds("delay", delay),
        random_part(),
        keys.channel(qname) if realtime else "",
    )
    reply = yield Script("send", _qkeys(keys, qname), args)
    if int(_found(reply, keys, qname)[0]) == TOO_LONG:
        raise MessageTooLong(
            f"message of {size} characters is longer than queue {qname!r}'s maxsize of {int(reply[1])}"
        )
    return str(reply[1])


def _message(reply: Sequence[Any]) -> RsmqMessage | None:
    if len(reply) == 1:
        return None
    message_id = str(reply[1])
    return RsmqMessage(message_id, str(reply[2]), int(reply[3]), int(reply[4]), sent_ms(message_id))


def receive_message(keys: Keys, qname: str, vt: int | None) -> Op[RsmqMessage | None]:
    qname = check.qname(qname)
    args = ("" if vt is None else check.seconds("vt", vt),)
    reply = yield Script("receive", _qkeys(keys, qname), args)
    return _message(_found(reply, keys, qname))


def pop_message(keys: Keys, qname: str) -> Op[RsmqMessage | None]:
    qname = check.qname(qname)
    reply = yield Script("pop", _qkeys(keys, qname), ())
    return _message(_found(reply, keys, qname))


def delete_message(keys: Keys, qname: str, message_id: str) -> Op[bool]:
    args = (check.message_id(message_id),)
    reply = yield Script("delete_message", _qkeys(keys, check.qname(qname)), args)
    return bool(int(reply[1]))


def change_message_visibility(keys: Keys, qname: str, message_id: str, vt: int) -> Op[bool]:
    qname = check.qname(qname)
    args = (check.message_id(message_id), check.seconds("vt", vt))
    reply = yield Script("change_visibility", _qkeys(keys, qname), args)
    return bool(int(_found(reply, keys, qname)[1]))


def list_messages(keys: Keys, qname: str, limit: int) -> Op[list[RsmqMessage]]:
    """pqueue's read-only look at a queue: the first ``limit`` messages by visible-at time,
    each with its ``rc`` and ``fr`` as stored (0 when never received); nothing is counted."""
    qname = check.qname(qname)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArgument(f"limit must be a whole number >= 1, got {limit!r}")
    reply = _found((yield Script("peek", _qkeys(keys, qname), (limit,))), keys, qname)
    rows = reply[1:]
    return [
        RsmqMessage(str(rows[i]), str(rows[i + 1]), int(rows[i + 2]), int(rows[i + 3]), sent_ms(str(rows[i])))
        for i in range(0, len(rows), 5)
    ]


def requeue(keys: Keys, source: str, target: str, limit: int) -> Op[int]:
    """Move up to ``limit`` messages of ``source`` (a dead queue) to ``target``, visible now."""
    source, target = check.qname(source), check.qname(target)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArgument(f"limit must be a whole number >= 1, got {limit!r}")
    reply = yield Script("requeue", (*_qkeys(keys, source), *_qkeys(keys, target)), (limit,))
    return int(_found(reply, keys, target)[1])


SETTLE_ACTIONS = ("delete", "hide", "bury")


def settle(keys: Keys, qname: str, message: RsmqMessage, action: str, hide_ms: int = 0) -> Op[bool]:
    """The consumer's fenced delete / hide / bury of a message it received (``lua/settle.lua``):
    ``True`` if done, ``False`` if the message was received again since, or is gone."""
    if action not in SETTLE_ACTIONS:
        raise InvalidArgument(f"settle action {action!r} is not one of {SETTLE_ACTIONS}")
    dead = dead_queue(qname)
    script_keys = (*_qkeys(keys, qname), *_qkeys(keys, dead), keys.queues)
    reply = yield Script("settle", script_keys, (action, message.id, message.rc, max(0, hide_ms), dead))
    return bool(int(reply[1]))
