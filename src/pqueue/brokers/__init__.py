"""Pick a backend by DSN scheme: ``memory://``, ``redis://``, ``rediss://``,
``redis+cluster://``, ``rediss+cluster://``, ``postgresql://``, ``sqlite://``.

Built-in backends are imported lazily, so ``import pqueue`` never needs redis-py or
psycopg. Third-party backends register a scheme through the entry-point group
``pqueue.brokers`` (name = scheme, value = ``"module:Class"``); the class needs a
``from_url(dsn, *, clock=None, **options)`` classmethod returning a
:class:`~pqueue.broker.FullBroker`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType
from typing import Any, cast
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

from pqueue.broker import FullBroker
from pqueue.clock import Clock
from pqueue.errors import ConfigError
from pqueue.extras import install_hint
from pqueue.suggest import did_you_mean

ENTRY_POINT_GROUP = "pqueue.brokers"

_BUILTIN: dict[str, tuple[str, str]] = {
    "memory": ("pqueue.brokers.memory:MemoryBroker", ""),
    "redis": ("pqueue.brokers.redis:RedisBroker", "redis"),
    "rediss": ("pqueue.brokers.redis:RedisBroker", "redis"),
    "redis+cluster": ("pqueue.brokers.redis:RedisBroker", "redis"),
    "rediss+cluster": ("pqueue.brokers.redis:RedisBroker", "redis"),
    "postgresql": ("pqueue.brokers.postgres:PostgresBroker", "postgres"),
    "postgres": ("pqueue.brokers.postgres:PostgresBroker", "postgres"),
    "sqlite": ("pqueue.brokers.sqlite:SqliteBroker", ""),
}
"""scheme -> (import target, the pip extra that provides its driver)."""


SECRET_PARAMETERS = frozenset({"password", "sslpassword", "ssl_password", "oauth_client_secret"})
"""Query parameters that carry secrets (libpq accepts ``?password=``, redis-py ``?ssl_password=``)."""


def redact(dsn: str) -> str:
    """The DSN with any password (in the netloc or a query parameter) replaced by ``***``,
    safe for logs and error messages."""
    try:
        parts = urlsplit(dsn)
        password = parts.password
    except ValueError:
        return "<unparseable DSN>"
    query = parse_qsl(parts.query, keep_blank_values=True)
    secret_query = any(key.lower() in SECRET_PARAMETERS for key, _ in query)
    if password is None and not secret_query:
        return dsn  # nothing to hide (and urlunsplit would turn sqlite:///x.db into sqlite:/x.db)
    if password is not None:
        parts = parts._replace(netloc=parts.netloc.replace(f":{password}@", ":***@", 1))
    if secret_query:
        masked = [(k, "***" if k.lower() in SECRET_PARAMETERS else v) for k, v in query]
        parts = parts._replace(query=urlencode(masked, safe="*"))
    return urlunsplit(parts)


def split_dsn(dsn: str) -> SplitResult:
    """``urlsplit(dsn)`` with its host and port checked; a malformed DSN is a ConfigError."""
    try:
        parts = urlsplit(dsn)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ConfigError(f"malformed DSN {redact(dsn)!r}: {exc}") from exc
    return parts


def refuse_unknown_options(
    backend: str, given: Iterable[str], known: Iterable[str], *, source: str, hint: str = ""
) -> None:
    """Raise :class:`ConfigError` if ``given`` holds a name ``known`` lacks; the message lists ``known``.

    Every built-in backend checks its DSN query parameters and its keyword options with
    this, so a typo (``?prefx=``) is refused when the broker is made, naming the options
    that exist, instead of being ignored or failing later inside the driver. ``source``
    says where the names came from ("DSN parameter", "keyword option"); ``hint`` is added
    after the list.
    """
    allowed = list(known)
    unknown = sorted(set(given) - set(allowed))
    if not unknown:
        return
    guesses = [guess for guess in (did_you_mean(name, allowed) for name in unknown) if guess]
    raise ConfigError(
        f"{backend} broker: unknown {source}{'s' if len(unknown) > 1 else ''} "
        f"{', '.join(repr(name) for name in unknown)}{' (' + '; '.join(guesses) + ')' if guesses else ''}; "
        f"known: {', '.join(allowed)}{hint}"
    )


def _plugins() -> list[Any]:
    """The entry points of third-party backends. Imported late: importlib.metadata takes
    tens of milliseconds to import, and only schemes other than the built-in ones need it."""
    from importlib.metadata import entry_points

    return [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in _BUILTIN]


def known_schemes() -> list[str]:
    """Every scheme :func:`connect` accepts: the built-in ones and registered plug-ins."""
    return sorted(set(_BUILTIN) | {ep.name for ep in _plugins()})


def is_known_scheme(scheme: str) -> bool:
    """Whether :func:`connect` accepts ``scheme`` (plug-ins are looked up only if not built in)."""
    return scheme in _BUILTIN or any(ep.name == scheme for ep in _plugins())


def load_builtin(scheme: str, module: str = "") -> ModuleType:
    """The package of the built-in backend of ``scheme`` (a key of ``_BUILTIN``), or its
    ``module`` (``"namespace"``). A missing driver is a :class:`ConfigError` that names the
    pip extra to install."""
    target, extra = _BUILTIN[scheme]
    package = target.partition(":")[0]
    try:
        return importlib.import_module(f"{package}.{module}" if module else package)
    except ImportError as exc:
        hint = f"; install it with: {install_hint(extra)}" if extra else ""
        raise ConfigError(f"the {scheme}:// backend cannot be loaded ({exc}){hint}") from exc


def _load(scheme: str) -> Any:
    """The broker class of ``scheme``. Built-in schemes cannot be taken over by a plug-in."""
    if scheme not in _BUILTIN:
        [plugin] = [ep for ep in _plugins() if ep.name == scheme]
        return plugin.load()
    return getattr(load_builtin(scheme), _BUILTIN[scheme][0].partition(":")[2])


def connect(dsn: str, *, clock: Clock | None = None, **options: Any) -> FullBroker:
    """Return an unopened broker for ``dsn``; use ``async with`` or ``await b.open()``.

    Args:
        dsn: ``scheme://...`` with a built-in scheme (``memory``, ``redis``, ``rediss``,
            ``redis+cluster``, ``rediss+cluster``,
            ``postgresql``, ``postgres``) or one a plug-in registered.
        clock: a test clock; production brokers use their server's time.
        **options: the backend's own settings, overriding the DSN's query parameters.

    Raises:
        ConfigError: not a DSN, an unknown scheme, a backend whose driver is not
            installed, or an unknown or invalid option (built-in backends name the known
            ones). Nothing connects here.
    """
    if not isinstance(dsn, str) or "://" not in dsn:
        raise ConfigError(
            f"invalid DSN {dsn!r}: expected scheme://..., e.g. memory://, "
            "redis://127.0.0.1:6379/0 or postgresql://user@host/db"
        )
    scheme = dsn.split("://", 1)[0].lower()
    if not is_known_scheme(scheme):
        raise ConfigError(
            f"unknown DSN scheme {scheme!r} in {redact(dsn)!r}; known schemes: {', '.join(known_schemes())}"
        )
    broker_class = _load(scheme)
    return cast(FullBroker, broker_class.from_url(dsn, clock=clock, **options))
