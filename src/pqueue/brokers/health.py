"""Whether a broker's server is reachable, and the two log lines an outage is worth.

A worker talks to its server over several connections (the claim loop's broker, the
heartbeat thread's broker, a listener), and each of them notices an outage. Without a
common record every one of them would log every failed attempt: hundreds of lines for a
one-second restart, or none at all where a driver retries silently. So every broker of
a process reports to one :class:`ServerHealth` per server address, and that object logs
exactly one WARNING when the server is lost (with the cause) and one INFO when it is
back (with how long it was gone). Retry loops above it log their attempts at DEBUG.

:func:`describe` turns a driver's connection error into the short cause those lines
and :class:`~pqueue.errors.BrokerUnreachable` carry: ``connection refused``,
``authentication failed for role 'app'``, ``timeout``, ``TLS: ...``; never a password.
:func:`failure_message` words the error: a server that turned the connection away
"refused" it, any other is "unreachable".
"""

from __future__ import annotations

import errno
import logging
import os
import re
import threading
import time

log = logging.getLogger("pqueue.broker")

_CAUSES = (
    # (substring of the driver's message, lower-cased) -> the cause we name
    ("password authentication failed", "authentication failed"),
    ("authentication failed", "authentication failed"),
    ("invalid password", "authentication failed"),
    ("invalid username-password", "authentication failed"),
    ("wrongpass", "authentication failed"),
    ("noauth", "authentication required"),
    ("authentication required", "authentication required"),
    ("no password supplied", "authentication required"),
    ("connection refused", "connection refused"),
    ("timeout", "timeout"),
    ("timed out", "timeout"),
    ("name or service not known", "unknown host"),
    ("could not translate host name", "unknown host"),
    ("temporary failure in name resolution", "unknown host"),
    ("nodename nor servname", "unknown host"),
    ("no route to host", "no route to host"),
    ("network is unreachable", "network unreachable"),
    ("connection reset", "connection reset"),
    ("server closed the connection", "server closed the connection"),
    ("connection closed by server", "server closed the connection"),
    ("terminating connection", "server closed the connection"),
    ("the database system is starting up", "server starting up"),
    ("the database system is shutting down", "server shutting down"),
    ("the database system is in recovery mode", "server in recovery"),
    ("does not exist", ""),  # a missing database or role: the driver's own words say which
)


TLS_MISMATCH = "TLS handshake failed: is this port TLS?"
"""The cause when a TLS client met a server port that does not speak TLS."""

_NO_TLS = ("server does not support ssl",)
"""libpq's words (lower-cased) for a server without TLS met by ``sslmode=require``."""

_ROLE = re.compile(r'\b(?:role|user) "([^"]*)"')
"""The role a Postgres authentication failure names (its password never appears)."""

_ROLE_CAUSES = ("authentication failed", "")
"""Causes that name the role when the driver's words do (the empty one: 'does not exist')."""

_REFUSALS = ("authentication ", "does not exist")
"""Causes of a server that answered and turned the connection away (not "unreachable")."""

_ERRNO = re.compile(r"\bError (\d+) (?:connecting|while)")
_ERRNO_CAUSES = {
    errno.ECONNREFUSED: "connection refused",
    errno.ETIMEDOUT: "timeout",
    errno.EHOSTUNREACH: "no route to host",
    errno.ENETUNREACH: "network unreachable",
    errno.ECONNRESET: "connection reset",
}


def describe(exc: BaseException) -> str:
    """The short cause of a connection failure, for one-line messages.

    Known causes get a fixed wording; TLS failures keep the driver's first line after
    ``TLS:``; anything else is the driver's first line (with no password: drivers do
    not print them, and DSNs are redacted before they reach a message).
    """
    text = " ".join(str(exc).split())
    first = str(exc).strip().splitlines()[0].strip() if str(exc).strip() else type(exc).__name__
    lower = text.lower()
    if "ssl" in lower or "tls" in lower or "certificate" in lower:
        return _tls_cause(lower, first)
    if isinstance(exc, TimeoutError):
        return "timeout"
    code = _ERRNO.search(text)  # redis-py: "Error 111 connecting to h:p. Connect call failed (...)."
    if code is not None:
        number = int(code.group(1))
        return _ERRNO_CAUSES.get(number) or os.strerror(number).lower()
    for needle, cause in _CAUSES:
        if needle in lower:
            return _with_role(cause, first) if cause in _ROLE_CAUSES else cause
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return first


def _tls_cause(lower: str, first: str) -> str:
    """A TLS failure: a server without TLS gets :data:`TLS_MISMATCH`; others keep the
    driver's first line (a certificate problem, a protocol version)."""
    if any(words in lower for words in _NO_TLS):
        return f"{TLS_MISMATCH} (the server does not support SSL)"
    return f"TLS: {first}"


def failure_message(server: str, cause: str) -> str:
    """The one-line error for a failed connection to ``server`` (e.g. ``Postgres at h:5432``).

    A server that turned the connection away "refused" it (a wrong role or password, a
    missing database, TLS on a plain port): calling it unreachable sent people looking
    for a network fault. Anything else is "unreachable".
    """
    if cause.startswith(TLS_MISMATCH):
        return f"{server}: {cause}"
    if any(words in cause for words in _REFUSALS):
        return f"{server} refused: {cause}"
    return f"{server} is unreachable: {cause}"


def _with_role(cause: str, line: str) -> str:
    """An authentication failure or a missing role as ``authentication failed for role 'app'``
    (with trust auth Postgres says 'role "app" does not exist'); any other 'does not
    exist' (a missing database) keeps the driver's words."""
    role = _ROLE.search(line)
    if role is None:
        return cause or _last_clause(line)
    return f"authentication failed for role '{role.group(1)}'"


def _last_clause(line: str) -> str:
    """'connection to server at ... failed: FATAL:  database "x" does not exist' -> the part
    after the last colon-separated prefix."""
    return line.rsplit(":", 1)[-1].strip() or line


class ServerHealth:
    """The reachability of one server, shared by every broker of this process that uses it.

    :meth:`lost` and :meth:`ok` may be called from any thread (the worker's heartbeat
    thread has a loop of its own). :meth:`ok` is on every command's path, so it costs one
    attribute read while the server is up.
    """

    __slots__ = ("_lock", "back_at", "cause", "down_since", "name", "quiet")

    def __init__(self, name: str) -> None:
        self.name = name
        """What the log lines call the server, e.g. ``Postgres at 127.0.0.1:5432``."""
        self.down_since: float | None = None
        """Monotonic time the current outage was first noticed, or None while reachable."""
        self.cause = ""
        """The cause of the current (or last) outage."""
        self.back_at: float | None = None
        """Monotonic time the last outage ended, or None."""
        self.quiet = False
        """The current outage is the tail of the last one (see :meth:`lost`): logged at DEBUG."""
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, object]) -> ServerHealth:
        return self  # one per server and process: a copy (redis-py copies its Retry per connection) shares it

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def lost(self, cause: str, *, settling: float = 0.0) -> None:
        """A command failed for want of the server; the first report of an outage logs it.

        ``settling`` (seconds): a failure this soon after the last outage ended is that
        outage's tail, not a new one -- a Redis Cluster master that came back answers
        ``CLUSTERDOWN`` for a moment while the other nodes take it in. It is logged at
        DEBUG, and becomes a WARNING only if it lasts longer than ``settling``.
        """
        now = time.monotonic()
        with self._lock:
            if self.down_since is not None:
                if not (self.quiet and now - self.down_since > settling):
                    return
                self.quiet = False  # the tail outlasted the settling time: a real outage
                cause, since = self.cause, self.down_since
            else:
                since, self.cause = now, cause
                self.down_since = since
                self.quiet = settling > 0 and self.back_at is not None and now - self.back_at < settling
                if self.quiet:
                    log.debug("%s is settling (%s)", self.name, cause)
                    return
        log.warning("lost %s (%s); retrying until it is back", self.name, cause)

    def ok(self, sent_at: float | None = None) -> None:
        """A command went through; the first one after an outage logs how long it lasted.

        ``sent_at`` (``time.monotonic()`` when the command was sent): a reply to a command
        sent before the outage was noticed says nothing about the server being back (a
        statement a stopping server finishes while it closes its other connections), so it
        neither ends the outage nor lets the next failure log it again.
        """
        down = self.down_since
        if down is None or (sent_at is not None and sent_at < down):
            return
        with self._lock:
            since, self.down_since = self.down_since, None
            quiet, self.quiet = self.quiet, False
            self.back_at = time.monotonic()
        if since is not None:
            log.log(
                logging.DEBUG if quiet else logging.INFO,
                "%s is back after %.1fs (it was gone: %s)",
                self.name,
                time.monotonic() - since,
                self.cause,
            )


_registry: dict[str, ServerHealth] = {}
_registry_lock = threading.Lock()


def health_of(name: str) -> ServerHealth:
    """The one :class:`ServerHealth` of this process for the server called ``name``."""
    with _registry_lock:
        health = _registry.get(name)
        if health is None:
            health = _registry[name] = ServerHealth(name)
        return health
