"""What the RSMQ API returns: a received message and a queue's attributes, in RSMQ's units."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RsmqMessage:
    """A received (or popped) message, as RSMQ's ``receiveMessage`` gives it."""

    id: str
    """32 characters: the send time in base 36, then 22 random ones."""
    message: str
    """The body (text; bytes that are not UTF-8 come back as surrogate escapes)."""
    rc: int
    """How many times it has been received, this time included."""
    fr: int
    """When it was first received, in epoch milliseconds."""
    sent: float
    """When it was sent, in epoch milliseconds (from the id, to the microsecond)."""


@dataclass(frozen=True, slots=True)
class QueueAttributes:
    """A queue's settings, totals and counts, as RSMQ's ``getQueueAttributes`` gives them."""

    vt: int
    """Seconds a received message stays hidden (the default of ``receive_message``)."""
    delay: int
    """Seconds a new message waits before it is visible (the default of ``send_message``)."""
    maxsize: int
    """The longest message accepted, in characters (UTF-16 code units); -1 unlimited."""
    totalrecv: int
    """Messages received (and popped) since the queue was made."""
    totalsent: int
    """Messages sent since the queue was made."""
    created: int
    """When the queue was made, epoch seconds."""
    modified: int
    """When its attributes last changed, epoch seconds."""
    msgs: int
    """Messages in the queue, visible or not."""
    hiddenmsgs: int
    """Messages not yet visible (received and within their vt, or delayed)."""
