"""RSMQ's input rules, checked before anything reaches Redis (bad input writes nothing).

The ranges are the reference client's: queue names of 1-160 characters of
``[A-Za-z0-9_-]``, message ids of 32 characters of ``[A-Za-z0-9:]``, ``vt`` and
``delay`` whole seconds from 0 to 9,999,999, ``maxsize`` from 1,024 to 65,536 or -1
(unlimited). Numbers must be ``int`` (not ``bool``, not ``float``): the reference
truncates ``"1.5"`` to 1 without a word, which here is an error instead.
"""

from __future__ import annotations

import re

from pqueue.rsmq.errors import InvalidArgument

QNAME = re.compile(r"[A-Za-z0-9_-]{1,160}")
MESSAGE_ID = re.compile(r"[A-Za-z0-9:]{32}")
MAX_SECONDS = 9_999_999
MIN_MAXSIZE, MAX_MAXSIZE, UNLIMITED = 1024, 65536, -1


def qname(value: object) -> str:
    """A queue name, or :class:`InvalidArgument` naming it."""
    if not isinstance(value, str) or QNAME.fullmatch(value) is None:
        raise InvalidArgument(f"queue name {value!r} is invalid: 1-160 characters of A-Z, a-z, 0-9, _ and -")
    return value


def message_id(value: object) -> str:
    """A message id (32 characters of ``[A-Za-z0-9:]``), or :class:`InvalidArgument`."""
    if not isinstance(value, str) or MESSAGE_ID.fullmatch(value) is None:
        raise InvalidArgument(f"message id {value!r} is invalid: 32 characters of A-Z, a-z, 0-9 and :")
    return value


def seconds(name: str, value: object) -> int:
    """``vt`` or ``delay``: whole seconds from 0 to 9,999,999."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SECONDS:
        raise InvalidArgument(
            f"{name} must be a whole number of seconds from 0 to {MAX_SECONDS}, got {value!r}"
        )
    return value


def maxsize(value: object) -> int:
    """``maxsize``: 1,024 to 65,536 characters, or -1 for unlimited."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or (value != UNLIMITED and not MIN_MAXSIZE <= value <= MAX_MAXSIZE)
    ):
        raise InvalidArgument(
            f"maxsize must be from {MIN_MAXSIZE} to {MAX_MAXSIZE}, or -1 for unlimited, got {value!r}"
        )
    return value


def message(value: object) -> str:
    """A message body: ``str`` only (ADR 0144). ``bytes`` are refused: RSMQ bodies are text
    in every client, and ``maxsize`` counts characters, which bytes do not have."""
    if not isinstance(value, str):
        hint = (
            ": decode it (or base64-encode binary data) first" if isinstance(value, bytes | bytearray) else ""
        )
        raise InvalidArgument(f"message must be a str, got {type(value).__name__}{hint}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: Redis stores UTF-8 bytes
        raise InvalidArgument(
            f"message is not valid text: {exc.object[exc.start : exc.end]!r} at index {exc.start} "
            "cannot be encoded as UTF-8"
        ) from None
    return value


def length(text: str) -> int:
    """The length RSMQ's ``maxsize`` is compared with: UTF-16 code units, as the reference
    client's ``message.length`` counts them (an emoji outside the BMP counts 2)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def namespace(value: object) -> str:
    """The key namespace (``ns``): a non-empty string without spaces."""
    if not isinstance(value, str) or not value or any(c.isspace() for c in value):
        raise InvalidArgument(f"ns {value!r} is invalid: a non-empty string without spaces")
    return value
