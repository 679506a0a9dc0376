"""What an API instance is allowed to do and accept: tokens and size limits, checked once.

A :class:`WebSettings` is frozen and validated on construction, so an app never starts
with a half-configured guard: no token and no explicit ``insecure_no_auth`` is an error,
as is a read-only token equal to the admin token.
"""

from __future__ import annotations

from dataclasses import dataclass

from pqueue.errors import ConfigError

MIB = 1024 * 1024
DEFAULT_MAX_JOB_BYTES = MIB
"""One job: a ``POST /jobs`` body, and each job of a batch as compact JSON: 1 MiB."""
DEFAULT_MAX_REQUEST_BYTES = 16 * MIB
"""Every other request body (``POST /jobs/batch`` above all): 16 MiB."""
DEFAULT_MAX_BATCH = 10_000
"""Jobs in one ``POST /jobs/batch``."""
MIN_TOKEN_CHARS = 16
"""Shorter tokens are refused: a bearer token is a password that scripts keep."""


@dataclass(frozen=True, slots=True)
class WebSettings:
    """Tokens and limits of one app (see docs/web.md).

    - ``token``: the admin token (every endpoint); ``read_token``: GETs only (dashboards).
    - ``insecure_no_auth``: serve without tokens (every caller is admin). Only for a
      loopback port or an app mounted behind the host application's own authentication.
    - ``metrics_public``: ``/metrics`` without a token (Prometheus inside a private network).
    """

    token: str | None = None
    read_token: str | None = None
    insecure_no_auth: bool = False
    metrics_public: bool = False
    max_job_bytes: int = DEFAULT_MAX_JOB_BYTES
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_batch: int = DEFAULT_MAX_BATCH

    def __post_init__(self) -> None:
        for name in ("token", "read_token"):
            value = getattr(self, name)
            if value is not None and not _good_token(value):
                raise ConfigError(
                    f"{name}: use at least {MIN_TOKEN_CHARS} printable ASCII characters without spaces "
                    "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')"
                )
        if self.token is None and not self.insecure_no_auth:
            raise ConfigError(
                "no API token: set token (PQUEUE_API_TOKEN / --api-token), or pass insecure_no_auth "
                "(--insecure-no-auth) to serve without authentication"
            )
        if self.read_token is not None and self.token is None:
            raise ConfigError("read_token needs token: the admin token is the one that can write")
        if self.read_token is not None and self.read_token == self.token:
            raise ConfigError("read_token must differ from token, or read-only callers could write")
        for name in ("max_job_bytes", "max_request_bytes", "max_batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
        if self.max_job_bytes > self.max_request_bytes:
            raise ConfigError("max_job_bytes must not exceed max_request_bytes")


def _good_token(value: object) -> bool:
    return (
        isinstance(value, str)
        and len(value) >= MIN_TOKEN_CHARS
        and value.isascii()
        and value.isprintable()
        and " " not in value
    )
