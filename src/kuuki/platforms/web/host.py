"""A loopback web server answers only requests for this machine.

A server on 127.0.0.1 without a password is open to whoever is on the machine, and so to
any web page its browser opens: through DNS rebinding, a page of ``attacker.example``
re-pointed at 127.0.0.1 reads the server as its own origin. The browser still names
``attacker.example`` in the ``Host`` header, so `HostGate` lets through only requests for
``localhost``, a loopback address (``127.0.0.1``, ``[::1]``) or the configured host, on any
port (an SSH tunnel changes it), and answers anything else 421 Misdirected Request. The
operator server (kuuki.ops.server) puts it in front of everything when it listens on
loopback.
"""

from __future__ import annotations

import ipaddress

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

_SHOWN = 80  # of a refused Host header, at most this many characters are echoed


def host_name(header: str) -> str:
    """The name a ``Host`` header gives, lowercased, without its port, brackets or final
    dot; "" when it is not a host[:port]."""
    value = header.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
    else:
        name, colon, port = value.rpartition(":") if value.count(":") == 1 else (value, "", "")
        bracket, rest = "]", f"{colon}{port}"
    if not bracket or (rest and not (rest[:1] == ":" and rest[1:].isdigit())):
        return ""
    return name.rstrip(".")


def _loopback_address(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostGate:
    """Only requests whose ``Host`` names this machine get through (module doc)."""

    def __init__(self, app: ASGIApp, configured: str) -> None:
        self.app = app
        self.names = {"localhost", host_name(configured) or configured.strip("[]").lower()}
        self._said = "localhost, 127.0.0.1 or [::1]" + (
            f" (or {configured})" if configured not in ("localhost", "127.0.0.1", "::1")
            else "")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            given = Headers(scope=scope).getlist("host")
            name = host_name(given[0]) if len(given) == 1 else ""
            if not (name in self.names or _loopback_address(name)):
                await self._refuse(scope, receive, send, given)
                return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send,
                      given: list[str]) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        shown = repr(given[0][:_SHOWN]) if len(given) == 1 else f"{len(given)} Host headers"
        response = PlainTextResponse(
            f"421: this server listens on this machine only and answers requests "
            f"for {self._said}; this one was for {shown}. Open it as "
            "http://127.0.0.1:<port>/ (a page of another site must not read it)\n",
            status_code=421)
        await response(scope, receive, send)
