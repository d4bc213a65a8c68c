"""A failed connection in a few words, for the one-sentence error `kuuki run` prints."""

from __future__ import annotations

import errno
import socket

import aiohttp


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and cause not in out:
        out.append(cause)
        cause = cause.__cause__ or cause.__context__
    return out


def network_reason(exc: BaseException) -> str:
    """"the host name could not be resolved …", "connection refused", … for `exc`."""
    chain = _chain(exc)
    if any(isinstance(e, socket.gaierror | aiohttp.ClientConnectorDNSError) for e in chain):
        return "the host name could not be resolved: no network or no DNS?"
    for e in chain:
        if isinstance(e, ConnectionRefusedError) or (
            isinstance(e, OSError) and e.errno == errno.ECONNREFUSED
        ):
            return "connection refused"
        if isinstance(e, TimeoutError):
            return "timed out"
        if isinstance(e, aiohttp.ClientSSLError):
            return "TLS failed: a proxy, or the system clock?"
    for e in chain:
        if isinstance(e, OSError) and e.strerror:
            return e.strerror.lower()
    return type(exc).__name__
