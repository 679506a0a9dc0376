"""The Redis URL of an RSMQ client, and its namespace.

An RSMQ client takes pqueue's Redis DSNs as they are: ``?prefix=`` (the key namespace of
pqueue's Redis backend) names the RSMQ namespace when ``ns`` is not given, so one
``PQUEUE_DSN`` serves both; pqueue's other DSN parameters (``retention``) mean nothing to
RSMQ and are dropped before the URL reaches redis-py. Without either, the namespace is
``rsmq``, the reference client's default.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pqueue.brokers import redact
from pqueue.errors import ConfigError
from pqueue.rsmq import validation as check

DEFAULT_NS = "rsmq"
PQUEUE_ONLY = {"retention"}


def resolve(dsn: str, ns: str | None) -> tuple[str, str]:
    """``(redis_url, namespace)`` for ``dsn`` and the ``ns`` argument."""
    if not isinstance(dsn, str) or not dsn.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"RSMQ needs a Redis URL (redis://host:6379/0), got {redact(str(dsn))!r}")
    parts = urlsplit(dsn)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = next((value for key, value in query if key == "prefix"), None)
    if ns is not None and prefix is not None and ns != prefix:
        raise ConfigError(f"ns={ns!r} and the DSN's ?prefix={prefix!r} disagree: give one")
    kept = [(key, value) for key, value in query if key != "prefix" and key not in PQUEUE_ONLY]
    url = urlunsplit(parts._replace(query=urlencode(kept)))
    return url, check.namespace(ns if ns is not None else prefix or DEFAULT_NS)
