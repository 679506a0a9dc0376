"""``redis://`` / ``rediss://`` DSN options: pqueue's own, the rest left to redis-py."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlunsplit

from pqueue.brokers import split_dsn
from pqueue.brokers.redis.keys import DEFAULT_PREFIX, validate_prefix
from pqueue.errors import ConfigError

DEFAULT_RETENTION = 24 * 3600.0
"""Seconds completed and cancelled jobs are kept (their hashes' TTL, and prune's cutoff)."""

OWN_OPTIONS = ("prefix", "retention", "pool_size", "pool_timeout", "retries")
"""Query parameters pqueue consumes; any other one is passed on to redis-py."""


@dataclass(frozen=True, slots=True)
class RedisOptions:
    """Validated settings of one :class:`~pqueue.brokers.redis.RedisBroker`."""

    url: str
    """The DSN for redis-py, without pqueue's own query parameters."""
    prefix: str = DEFAULT_PREFIX
    retention: float = DEFAULT_RETENTION
    pool_size: int = 16
    """Connections for commands; the wake-up listener holds one more."""
    pool_timeout: float = 20.0
    """Seconds a command waits for a free pooled connection before failing."""
    retries: int = 6
    """Reconnect attempts (exponential backoff, 50 ms up to 250 ms) before BrokerUnreachable."""

    @classmethod
    def parse(cls, dsn: str, overrides: Mapping[str, object]) -> RedisOptions:
        """Split ``dsn`` into redis-py's URL and pqueue's options; ``overrides`` win."""
        parts = split_dsn(dsn)
        if parts.scheme not in ("redis", "rediss"):
            raise ConfigError(f"not a redis DSN: expected redis:// or rediss://, got {parts.scheme!r}")
        query = parse_qsl(parts.query, keep_blank_values=True)
        own: dict[str, object] = {k: v for k, v in query if k in OWN_OPTIONS}
        unknown = set(overrides) - set(OWN_OPTIONS)
        if unknown:
            raise ConfigError(
                f"redis broker: unknown option(s) {sorted(unknown)}; known: {list(OWN_OPTIONS)}"
            )
        own.update(overrides)
        passthrough = urlencode([(k, v) for k, v in query if k not in OWN_OPTIONS])
        return cls(
            url=urlunsplit(parts._replace(query=passthrough)),
            prefix=validate_prefix(str(own.get("prefix", DEFAULT_PREFIX))),
            retention=_number("retention", own.get("retention", DEFAULT_RETENTION), minimum=0.0),
            pool_size=int(_number("pool_size", own.get("pool_size", 16), minimum=1.0)),
            pool_timeout=_number("pool_timeout", own.get("pool_timeout", 20.0), minimum=0.0),
            retries=int(_number("retries", own.get("retries", 6), minimum=0.0)),
        )


def _number(name: str, value: object, *, minimum: float) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"redis DSN: {name} must be a number, got {value!r}") from exc
    if not math.isfinite(number) or number < minimum:
        raise ConfigError(f"redis DSN: {name} must be a finite number >= {minimum:g}, got {value!r}")
    return number
