"""Rate and concurrency limits: the rules a producer resolves into a job's :class:`Limit`.

A rule (``rate="100/s"``, ``concurrency=5``, ``limit_key=lambda payload: ...``) lives on
a task or a queue of the router; at enqueue the producer turns it into the
:class:`Limit` the job carries (its group name and parameters), because a broker cannot
run Python. Brokers admit a limited job at claim time only while its group (queue,
limit key) has a free concurrency slot and a token (ADR 0110, docs/limits.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pqueue.errors import ConfigError, InvalidOption
from pqueue.spec import KEY_RE

QUEUE_GROUP = "*"
"""The limit key of a queue rule without ``limit_key``: one group for the whole queue."""

MAX_CONCURRENCY = 100_000
RATE_RE = re.compile(
    r"^\s*(\d*[1-9]\d*(?:\.\d+)?|\d+\.\d*[1-9]\d*)\s*/\s*(s|sec|second|m|min|minute|h|hour)\s*\Z"
)
"""A rate as text: a number > 0, a slash and a unit (``"100/s"``, ``"30/m"``, ``"500/h"``).
The API's schema shows this same pattern, so it cannot accept a rate the parser refuses."""
_PER = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0}
_PER |= {"h": 3600.0, "hour": 3600.0}

KeyFn = Callable[[Any], Any]


def parse_rate(rate: object, *, error: type[Exception] = ConfigError) -> float:
    """Tokens per second of a rate such as ``"100/s"``, ``"30/m"`` or ``"500/h"``."""
    match = RATE_RE.match(rate) if isinstance(rate, str) else None
    if match is None:
        raise error(f"rate must be text like '100/s', '30/m' or '500/h' with a number > 0, got {rate!r}")
    return float(match.group(1)) / _PER[match.group(2)]


def burst_for(per_second: float) -> float:
    """The bucket size for a rate: a tenth of a second of tokens, at least one (ADR 0110)."""
    return max(1.0, float(math.floor(per_second / 10)))


def check_concurrency(concurrency: object, *, error: type[Exception] = ConfigError) -> int | None:
    """``concurrency`` if it is None or an int from 1 to :data:`MAX_CONCURRENCY`."""
    if concurrency is None:
        return None
    if (
        isinstance(concurrency, bool)
        or not isinstance(concurrency, int)
        or not 1 <= concurrency <= MAX_CONCURRENCY
    ):
        raise error(f"concurrency must be an int from 1 to {MAX_CONCURRENCY}, got {concurrency!r}")
    return concurrency


def check_key(key: object) -> str:
    """A limit key as stored: 1-200 printable ASCII characters, no spaces."""
    if not isinstance(key, str) or not KEY_RE.match(key):
        raise InvalidOption(
            f"limit key must be text of 1-200 printable ASCII characters without spaces, got {key!r}"
        )
    return key


@dataclass(frozen=True, slots=True)
class Limit:
    """What a limited job carries: its group within the queue and the group's limits."""

    key: str
    rate: float | None = None
    """Tokens per second, or None for no rate limit."""
    burst: float = 1.0
    """The token bucket's size."""
    concurrency: int | None = None
    """The most jobs of the group active at once, or None for no such limit."""

    def to_text(self) -> str:
        """The compact form brokers store: ``rate burst concurrency`` (``-`` for none)."""
        rate = "-" if self.rate is None else repr(self.rate)
        conc = "-" if self.concurrency is None else str(self.concurrency)
        return f"{rate} {self.burst!r} {conc}"

    @classmethod
    def from_text(cls, key: str, text: str) -> Limit:
        rate, burst, conc = text.split(" ")
        return cls(
            key, None if rate == "-" else float(rate), float(burst), None if conc == "-" else int(conc)
        )


@dataclass(frozen=True, slots=True)
class LimitRule:
    """A limit declared on a task or a queue; :meth:`resolve` makes a job's :class:`Limit`."""

    rate: float | None
    concurrency: int | None
    limit_key: KeyFn | str | None
    default_key: str

    @classmethod
    def build(
        cls, rate: str | None, concurrency: int | None, limit_key: KeyFn | str | None, *, default_key: str
    ) -> LimitRule | None:
        """Check a declaration (``ConfigError`` naming the bad field); None when it limits nothing."""
        per_second = None if rate is None else parse_rate(rate)
        conc = check_concurrency(concurrency)
        if limit_key is not None and not (callable(limit_key) or isinstance(limit_key, str)):
            raise ConfigError(f"limit_key must be a function of the payload or a str, got {limit_key!r}")
        if isinstance(limit_key, str):
            try:
                check_key(limit_key)
            except InvalidOption as exc:
                raise ConfigError(str(exc)) from None
        if per_second is None and conc is None:
            if limit_key is not None:
                raise ConfigError("limit_key needs rate= and/or concurrency=")
            return None
        return cls(per_second, conc, limit_key, default_key)

    def resolve(self, payload: Any, key: str | None = None) -> Limit:
        """The job's limit: ``key`` if given, else ``limit_key(payload)``, else the default key.

        Raises :class:`~pqueue.errors.InvalidOption` when ``limit_key`` fails or returns
        something other than a valid key string; nothing is enqueued then.
        """
        if key is None:
            key = self._key_of(payload)
        return Limit(
            check_key(key),
            self.rate,
            burst_for(self.rate) if self.rate is not None else 1.0,
            self.concurrency,
        )

    def _key_of(self, payload: Any) -> str:
        if self.limit_key is None:
            return self.default_key
        if isinstance(self.limit_key, str):
            return self.limit_key
        try:
            key = self.limit_key(payload)
        except Exception as exc:
            raise InvalidOption(f"limit_key raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(key, str):
            raise InvalidOption(f"limit_key must return a str, returned {key!r}")
        return key


def explicit_limit(key: str | None, rate: str | None, concurrency: int | None) -> Limit | None:
    """The limit of an enqueue that names it itself (a producer without the router)."""
    if rate is None and concurrency is None:
        if key is not None:
            raise InvalidOption("limit_key needs rate= and/or concurrency= (or a router that defines them)")
        return None
    per_second = None if rate is None else parse_rate(rate, error=InvalidOption)
    conc = check_concurrency(concurrency, error=InvalidOption)
    return Limit(
        check_key(QUEUE_GROUP if key is None else key),
        per_second,
        burst_for(per_second) if per_second is not None else 1.0,
        conc,
    )


def refill(tokens: float, refilled_at: float, now: float, limit: Limit) -> float:
    """The bucket's tokens at ``now`` (it refills at ``rate`` per second up to ``burst``)."""
    assert limit.rate is not None
    return min(limit.burst, tokens + max(0.0, now - refilled_at) * limit.rate)


@dataclass(frozen=True, slots=True)
class LimitState:
    """One limit group as a broker reports it (``Client.stats().limits``)."""

    queue: str
    key: str
    active: int
    waiting: int
    concurrency: int | None
    rate: float | None
    tokens: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "key": self.key,
            "active": self.active,
            "waiting": self.waiting,
            "concurrency": self.concurrency,
            "rate": self.rate,
            "tokens": self.tokens,
        }
