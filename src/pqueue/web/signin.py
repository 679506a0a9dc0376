"""One-time sign-in links: open the dashboard already signed in, with no token in a URL.

A holder of the admin or the read-only token asks ``POST /session/link`` for a link. The
link carries a random code in its fragment (``/#signin=<code>``), which browsers never
send to the server, so it reaches no access log, proxy or ``Referer``. The dashboard's
script takes the code out of the address bar and trades it once, within
:data:`LINK_SECONDS`, at ``POST /session/redeem`` for a session token of the same role,
valid :data:`SESSION_SECONDS`. It keeps that token as it keeps a pasted one (ADR 0096).

- A link opens once: the first redeem drops its code, whether or not it was still valid.
- A session is never stronger than the token that minted the link (a read-only token's
  link opens a read-only session), and never mints a link itself, so a session that
  leaks ends when it expires.
- Codes and session tokens are kept as SHA-256 digests, in this process
  (:class:`pqueue.web.auth.SignIns`; ``pqueue serve`` is one process): a restart signs
  link-opened dashboards out. Nothing logs a code or a token.

ADR 0160 says why this and not a token in the URL or a cookie.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from pqueue.web.auth import LINK_SECONDS, SESSION_SECONDS, Role, SignIns
from pqueue.web.errors import error_body
from pqueue.web.guard import LINK_PATH, REDEEM_PATH, ROLE_KEY
from pqueue.web.models import LinkOut, RedeemIn, SessionTokenOut

log = logging.getLogger("pqueue.web")

_NO_STORE = {"Cache-Control": "no-store"}


def signin_router(signins: SignIns) -> APIRouter:
    """``POST /session/link`` (either token) and ``POST /session/redeem`` (no token: the code is one)."""
    router = APIRouter(tags=["auth"])

    @router.post(
        LINK_PATH,
        status_code=201,
        response_model=LinkOut,
        summary="A one-time link that opens the dashboard signed in, with this token's role",
    )
    async def link(request: Request) -> JSONResponse:
        role = Role(request.scope.get(ROLE_KEY, Role.READ))
        code = signins.mint(role)
        log.info("dashboard sign-in link minted (role %s, %.0f s to open it)", role, LINK_SECONDS)
        fragment = f"#signin={code}"
        dashboard = str(request.url.replace(query=None)).removesuffix(LINK_PATH)  # mounted: its prefix
        body: dict[str, Any] = {
            "url": f"{dashboard}/{fragment}",
            "fragment": fragment,
            "role": str(role),
            "expires_in": LINK_SECONDS,
        }
        return JSONResponse(body, status_code=201, headers=_NO_STORE)

    @router.post(
        REDEEM_PATH,
        response_model=SessionTokenOut,
        summary="Trade a sign-in link's code, once, for a session token (the dashboard does this)",
    )
    async def redeem(body: RedeemIn) -> JSONResponse:
        opened = signins.redeem(body.code)
        if opened is None:
            log.info("dashboard sign-in link refused: unknown, already used or expired")
            return error_body(
                401, "unauthorized", "this sign-in link is unknown, already used or expired: ask for another"
            )
        token, role = opened
        log.info("dashboard session opened by a sign-in link (role %s)", role)
        answer = {"token": token, "role": str(role), "expires_in": SESSION_SECONDS}
        return JSONResponse(answer, headers=_NO_STORE)

    return router
