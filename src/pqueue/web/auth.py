"""Bearer tokens: which role a request's ``Authorization`` header carries.

Two roles: ``admin`` (everything) and ``read`` (GET and HEAD only). Tokens are kept as
SHA-256 digests and compared with :func:`hmac.compare_digest` on equal-length digests,
every configured token every time, so neither the content nor the length of a token
leaks through timing, nor which of the two a guess came close to.

Besides the configured tokens, a header may carry a dashboard session opened by a
one-time sign-in link (:class:`SignIns`, :mod:`pqueue.web.signin`, ADR 0160). Those are
random 256-bit tokens looked up by their SHA-256 digest: a lookup's timing tells a guesser
nothing about a token it cannot already produce.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    """What a caller may do."""

    ADMIN = "admin"
    READ = "read"


class Tokens:
    """The configured tokens; :meth:`role` answers for one header value."""

    def __init__(self, token: str | None, read_token: str | None) -> None:
        self._digests = [
            (role, _digest(value)) for role, value in ((Role.ADMIN, token), (Role.READ, read_token)) if value
        ]

    def role(self, authorization: bytes | None) -> Role | None:
        """The role of ``Authorization: Bearer <token>``; None when missing or wrong."""
        candidate = bearer_digest(authorization)
        if candidate is None:
            return None
        found: Role | None = None
        for role, digest in self._digests:  # no early exit: every token is compared
            if hmac.compare_digest(candidate, digest) and found is None:
                found = role
        return found


def refusal(authorization: bytes | None) -> str:
    """Why ``authorization`` carries no role, for a 401's detail; never echoes what was sent
    (a header without the scheme is often the bare token)."""
    if not authorization:
        return "no bearer token"
    scheme, _, given = authorization.partition(b" ")
    if scheme.lower() != b"bearer":
        return "the Authorization header lacks the 'Bearer ' scheme"
    if not given.strip():
        return "an empty bearer token"
    return "a wrong bearer token"


def bearer_digest(authorization: bytes | None) -> bytes | None:
    """The SHA-256 of the token in ``Authorization: Bearer <token>``; None without one."""
    if not authorization:
        return None
    scheme, _, given = authorization.partition(b" ")
    if scheme.lower() != b"bearer":
        return None
    return hashlib.sha256(given.strip()).digest()


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


LINK_SECONDS = 60.0
"""How long a sign-in link may wait to be opened."""
SESSION_SECONDS = 8 * 3600.0
"""How long the session a link opens lasts: a working day."""
MAX_LINKS = 100
"""Unused links held at once; minting more forgets the oldest."""
MAX_SESSIONS = 1000
"""Sessions held at once; opening more ends the oldest."""


@dataclass(frozen=True, slots=True)
class _Grant:
    role: Role
    until: float


class SignIns:
    """The live sign-in links and the sessions they opened, as digests, with their expiry on
    ``now`` (monotonic: a step of the wall clock neither ends nor extends them). They live in
    this process: a restart signs link-opened dashboards out."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._links: dict[bytes, _Grant] = {}
        self._sessions: dict[bytes, _Grant] = {}

    def mint(self, role: Role) -> str:
        """A new one-time code for a session of ``role``, valid :data:`LINK_SECONDS`."""
        code = secrets.token_urlsafe(32)
        now = self._now()
        _hold(self._links, _digest(code), _Grant(role, now + LINK_SECONDS), MAX_LINKS, now)
        return code

    def redeem(self, code: str) -> tuple[str, Role] | None:
        """A session token and its role for a live ``code``, which is spent either way; None
        for a code that is unknown, spent or expired."""
        grant = self._links.pop(_digest(code), None)
        now = self._now()
        if grant is None or grant.until <= now:
            return None
        token = secrets.token_urlsafe(32)
        session = _Grant(grant.role, now + SESSION_SECONDS)
        _hold(self._sessions, _digest(token), session, MAX_SESSIONS, now)
        return token, grant.role

    def role(self, authorization: bytes | None) -> Role | None:
        """The role of ``Authorization: Bearer <session token>``; None when it is no live session."""
        key = bearer_digest(authorization)
        if key is None or (grant := self._sessions.get(key)) is None:
            return None
        if grant.until <= self._now():
            del self._sessions[key]
            return None
        return grant.role


def _hold(grants: dict[bytes, _Grant], key: bytes, grant: _Grant, most: int, now: float) -> None:
    """Add ``grant``, dropping the expired ones and then the oldest beyond ``most``."""
    for stale in [k for k, g in grants.items() if g.until <= now]:
        del grants[stale]
    while len(grants) >= most:
        del grants[next(iter(grants))]  # a dict keeps insertion order: the oldest first
    grants[key] = grant
