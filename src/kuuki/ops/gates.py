"""The operator server's token, checked before any route (kuuki.ops.server).

With a token every request carries it — ``Authorization: Bearer`` (the scheme in any case,
RFC 9110 §11.1) or ``?token=`` — exactly once: two ``?token=``, two ``Authorization``
headers, or a header and a ``?token=`` that differ get 400, so that no two parts of a stack
(a proxy, a cache, the server) can each read a different one. Then it is compared in
constant time, or 401. (On loopback the server also checks ``Host``: kuuki.platforms.web.host.)
"""

from __future__ import annotations

import hmac
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

IN_QUERY = "kuuki.token_in_query"  # the scope's note that a browser sent ?token=
PUBLIC = ("/shared/", "/dashboard/")  # the page's packaged files: no data, no token


class TokenGate:
    """Every HTTP request carries the token once, or gets 400 or 401 (before routing: no
    path says whether it exists); the page's packaged files need none."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not str(scope.get("path", "")).startswith(PUBLIC):
            request = Request(scope)
            given = _given(request)
            # Taken out of the request once read: whatever logs its URL later (an access
            # log an operator turned on) never sees the token.
            query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            if len(query) != len(request.query_params.multi_items()):
                scope["query_string"] = urlencode(query).encode()
                scope[IN_QUERY] = True
            if given is None:
                await PlainTextResponse(
                    "400: the token was given more than once (two ?token=, two "
                    "Authorization headers, or a header and a ?token= that differ); send "
                    "it once\n", status_code=400)(scope, receive, send)
                return
            if not hmac.compare_digest(given.encode(), self.token):
                await PlainTextResponse(
                    "401: this operator server needs its token (Authorization: Bearer "
                    "<token>, or ?token=)\n", status_code=401,
                    headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _given(request: Request) -> str | None:
    """The token the request carries ("" for none), or None when it carries it twice."""
    headers = request.headers.getlist("authorization")
    queried = request.query_params.getlist("token")
    if len(headers) > 1 or len(queried) > 1:
        return None
    bearer = ""
    if headers:
        scheme, _, credential = headers[0].strip().partition(" ")
        bearer = credential.strip() if scheme.lower() == "bearer" else ""
    if bearer and queried and queried[0] != bearer:
        return None
    return bearer or (queried[0] if queried else "")
