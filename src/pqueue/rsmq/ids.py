"""RSMQ message ids: 10 base-36 characters of the server's microsecond time, then 22
random characters of ``[A-Za-z0-9]``.

The time part is made in Lua from Redis ``TIME`` (``lua/_lib.lua``), the random part
here (Lua's random numbers in Redis are seeded the same on every call). ``sent`` is the
time part decoded, in milliseconds with a fraction, as the reference client reports it.
"""

from __future__ import annotations

import random
import string

ALPHABET = string.ascii_uppercase + string.ascii_lowercase + string.digits
RANDOM_LENGTH = 22


def random_part() -> str:
    """The 22 random characters that follow the time in an id. Not secret (the reference
    uses ``Math.random``): they only keep ids of one microsecond apart, so the process's
    ``random`` (reseeded after ``fork``) serves, at a twentieth of ``secrets``' cost."""
    return "".join(random.choices(ALPHABET, k=RANDOM_LENGTH))


def sent_ms(message_id: str) -> float:
    """When the message was sent, in epoch milliseconds (from its id's first 10 characters)."""
    return int(message_id[:10], 36) / 1000
