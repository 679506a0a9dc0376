"""``redis://`` / ``rediss://`` (and ``redis+cluster://`` / ``rediss+cluster://``) DSN
options: pqueue's own, and the few passed on to redis-py.

Any other query parameter is refused here: redis-py would only fail on it at the first
connection, with a ``TypeError`` about an unexpected keyword argument. A cluster DSN names
one or more startup nodes, ``host:port`` separated by commas (ADR 0143).
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

OWN_OPTIONS = ("prefix", "retention", "pool_size", "pool_timeout", "retries", "wait_replicas")
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

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
"""Cluster scheme -> the scheme of each node's connection."""


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
    nodes: tuple[tuple[str, int], ...] = ()
    """A cluster DSN's startup nodes (``url`` then names the first); empty: one server."""
    wait_replicas: int = 0
    """Replicas that must confirm (``WAIT``) an enqueue or ack before it returns; 0: none."""

    @property
    def cluster(self) -> bool:
        """Whether the DSN is a ``redis+cluster://`` / ``rediss+cluster://`` one."""
        return bool(self.nodes)

    @classmethod
    def parse(cls, dsn: str, overrides: Mapping[str, object]) -> RedisOptions:
        """Split ``dsn`` into redis-py's URL and pqueue's options; ``overrides`` win.

        ``overrides`` are keyword options, pqueue's own only (:data:`OWN_OPTIONS`). The DSN
        may also carry :data:`DRIVER_OPTIONS` (and :data:`TLS_OPTIONS` on ``rediss://``),
        which go to redis-py. Raises :class:`ConfigError` for another scheme, any other
        option (naming the known ones), or a value out of range.
        """
        nodes: tuple[tuple[str, int], ...] = ()
        scheme = dsn.split("://", 1)[0].lower()
        if scheme in CLUSTER_SCHEMES:
            nodes, dsn = cluster_nodes(dsn)
        parts = split_dsn(dsn)
        if parts.scheme not in ("redis", "rediss"):
            raise ConfigError(
                "not a redis DSN: expected redis://, rediss://, redis+cluster:// or rediss+cluster://, "
                f"got {parts.scheme!r}"
            )
        if nodes and parts.path.strip("/") not in ("", "0"):
            database = parts.path.strip("/")
            raise ConfigError(f"redis cluster DSN: a cluster has database 0 only, got /{database}")
        query = parse_qsl(parts.query, keep_blank_values=True)
        tls = TLS_OPTIONS if parts.scheme == "rediss" else ()
        driver = tuple(o for o in DRIVER_OPTIONS if not (nodes and o == "db"))
        refuse_unknown_options(
            "redis",
            (k for k, _ in query),
            (*OWN_OPTIONS, *driver, *tls),
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
            nodes=nodes,
            wait_replicas=int(_number("wait_replicas", own.get("wait_replicas", 0), minimum=0.0)),
        )


def cluster_nodes(dsn: str) -> tuple[tuple[tuple[str, int], ...], str]:
    """The startup nodes of a cluster DSN, and the DSN of its first node (scheme
    ``redis``/``rediss``, same credentials, path and query): what the rest of the parsing
    and redis-py's URL parser read. A node without a port is on 6379."""
    scheme, rest = dsn.split("://", 1)
    netloc, sep, tail = rest.partition("/")
    if not sep:
        netloc, sep, tail = rest.partition("?")
        tail = f"?{tail}" if sep else ""
        sep = "/"
    credentials, at, hosts = netloc.rpartition("@")
    nodes: list[tuple[str, int]] = []
    for item in hosts.split(","):
        host, colon, port = item.strip().rpartition(":")
        if not colon:
            host, port = item.strip(), "6379"
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(
                f"redis cluster DSN: startup node {item!r} is not host:port "
                "(e.g. redis+cluster://10.0.0.1:7000,10.0.0.2:7000/)"
            )
        nodes.append((host.strip("[]"), int(port)))
    first_host, first_port = nodes[0]
    bracketed = f"[{first_host}]" if ":" in first_host else first_host  # an IPv6 address
    first = f"{credentials}{at}{bracketed}:{first_port}"
    return tuple(nodes), f"{CLUSTER_SCHEMES[scheme.lower()]}://{first}{sep}{tail}"


def _number(name: str, value: object, *, minimum: float) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"redis DSN: {name} must be a number, got {value!r}") from exc
    if not math.isfinite(number) or number < minimum:
        raise ConfigError(f"redis DSN: {name} must be a finite number >= {minimum:g}, got {value!r}")
    return number
