"""``redis://`` / ``rediss://`` DSN options: pqueue's own, and the few passed on to redis-py.

Any other query parameter is refused here: redis-py would only fail on it at the first
connection, with a ``TypeError`` about an unexpected keyword argument.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlunsplit

from pqueue.brokers import refuse_unknown_options, split_dsn
from pqueue.brokers.redis.keys import DEFAULT_PREFIX, validate_prefix
from pqueue.errors import ConfigError

DEFAULT_RETENTION = 24 * 3600.0
"""Seconds completed and cancelled jobs are kept (their hashes' TTL, and prune's cutoff)."""

OWN_OPTIONS = ("prefix", "retention", "pool_size", "pool_timeout", "retries")
"""Query parameters (or keyword options) pqueue consumes itself."""
DRIVER_OPTIONS = ("db", "socket_timeout", "socket_connect_timeout")
"""Query parameters passed on to redis-py. Connection settings pqueue makes itself
(pool size and timeout, retries, keep-alive, health checks, client name, decoding) are
not among them: a DSN must not undo what the broker relies on."""
TLS_OPTIONS = (
    "ssl_cert_reqs",
    "ssl_ca_certs",
    "ssl_ca_path",
    "ssl_ca_data",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_password",
    "ssl_check_hostname",
    "ssl_min_version",
    "ssl_ciphers",
)
"""Query parameters passed on to redis-py's TLS connection; ``rediss://`` only."""


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
        """Split ``dsn`` into redis-py's URL and pqueue's options; ``overrides`` win.

        ``overrides`` are keyword options, pqueue's own only (:data:`OWN_OPTIONS`). The DSN
        may also carry :data:`DRIVER_OPTIONS` (and :data:`TLS_OPTIONS` on ``rediss://``),
        which go to redis-py. Raises :class:`ConfigError` for another scheme, any other
        option (naming the known ones), or a value out of range.
        """
        parts = split_dsn(dsn)
        if parts.scheme not in ("redis", "rediss"):
            raise ConfigError(f"not a redis DSN: expected redis:// or rediss://, got {parts.scheme!r}")
        query = parse_qsl(parts.query, keep_blank_values=True)
        tls = TLS_OPTIONS if parts.scheme == "rediss" else ()
        refuse_unknown_options(
            "redis",
            (k for k, _ in query),
            (*OWN_OPTIONS, *DRIVER_OPTIONS, *tls),
            source="DSN parameter",
            hint=" (the ssl_* parameters need a rediss:// DSN)" if not tls and "ssl_" in parts.query else "",
        )
        refuse_unknown_options(
            "redis",
            overrides,
            OWN_OPTIONS,
            source="keyword option",
            hint=f" (redis-py's {', '.join(DRIVER_OPTIONS)} go in the DSN)",
        )
        own: dict[str, object] = {k: v for k, v in query if k in OWN_OPTIONS}
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
