"""Bearer tokens: which role a request's ``Authorization`` header carries.

Two roles: ``admin`` (everything) and ``read`` (GET and HEAD only). Tokens are kept as
SHA-256 digests and compared with :func:`hmac.compare_digest` on equal-length digests,
every configured token every time, so neither the content nor the length of a token
leaks through timing, nor which of the two a guess came close to.
"""

from __future__ import annotations

import hashlib
import hmac
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
        if not authorization:
            return None
        scheme, _, given = authorization.partition(b" ")
        if scheme.lower() != b"bearer":
            return None
        candidate = hashlib.sha256(given.strip()).digest()
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


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()
