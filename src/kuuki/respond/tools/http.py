"""The declarative HTTP JSON tool: a community's own API, wired in kuuki.toml, no code.

One `[[tools.http]]` table becomes one tool. Its parameters become the argument schema the
model is shown and held to; values fill ``{placeholders}`` of the URL (URL-encoded), and
the rest go in the query string (GET) or a JSON body (POST). Headers come from the
settings (``${NAME}`` read from the environment at start-up) and appear nowhere else: not
in the trace, not in errors, not in logs. ``keep`` names the fields of the answer the model
sees (``next.start``, ``items[].title``); without it the whole JSON is kept (then capped).

Anything but a JSON answer — an error status, HTML, a body over `MAX_BODY_BYTES` — is a
`ToolError` whose short sentence the model gets instead (kuuki.respond.tools.toolbox).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import aiohttp

from kuuki.respond.tools.base import ToolContext, ToolError
from kuuki.settings.tools import HttpToolSpec
from kuuki.text.secrets import remember

MAX_BODY_BYTES = 1_000_000
MAX_LIST_ITEMS = 20
_PLACEHOLDER = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*)\}")


class HttpJsonTool:
    """An HTTP JSON API as a tool; see the module docstring."""

    def __init__(self, spec: HttpToolSpec, *, timeout_s: float = 5.0) -> None:
        self.spec = spec
        self.name = spec.name
        self.description = spec.description
        self.parameters = spec.schema()
        self.timeout_s = timeout_s
        # Its header values are secrets: masked wherever text leaves kuuki.
        remember(*spec.headers.values(), *(v.split()[-1] for v in spec.headers.values()
                                           if v.split()))

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        spec = self.spec
        used = set(_PLACEHOLDER.findall(spec.url))
        url = _PLACEHOLDER.sub(lambda m: quote(str(args.get(m.group(1), "")), safe=""), spec.url)
        rest = {k: v for k, v in args.items() if k not in used}
        query = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in rest.items()}
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session, session.request(
                spec.method,
                url,
                params=query if spec.method == "GET" and query else None,
                json=rest if spec.method == "POST" else None,
                headers=dict(spec.headers),
            ) as response:
                status = response.status
                body = await _read_capped(response)
                kind = response.headers.get("Content-Type", "")
        except aiohttp.ClientError as exc:
            raise ToolError(f"could not reach the service ({type(exc).__name__})") from None
        if status >= 400:
            raise ToolError(f"the service answered HTTP {status}")
        if len(body) > MAX_BODY_BYTES:
            raise ToolError(f"the answer was too large (over {MAX_BODY_BYTES // 1000} kB)")
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            what = "HTML" if "html" in kind or body.lstrip()[:1] == b"<" else "text"
            raise ToolError(f"the service answered with {what}, not JSON") from None
        return keep_fields(data, spec.keep) if spec.keep else data


async def _read_capped(response: aiohttp.ClientResponse) -> bytes:
    """The body, or its first MAX_BODY_BYTES + 1 bytes: a huge answer is never held whole."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(64 * 1024):
        parts.append(chunk)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            break
    return b"".join(parts)


def keep_fields(data: Any, paths: tuple[str, ...]) -> dict[str, Any]:
    """Only the named fields: ``a.b`` walks objects, ``items[].title`` each list item."""
    out: dict[str, Any] = {}
    for path in paths:
        value = _walk(data, path.split("."))
        if value is not None:
            out[path] = value
    return out


def _walk(value: Any, parts: list[str]) -> Any:
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    each = head.endswith("[]")
    key = head[:-2] if each else head
    if key:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    if each:
        if not isinstance(value, list):
            return None
        found = [_walk(item, rest) for item in value[:MAX_LIST_ITEMS]]
        return [f for f in found if f is not None]
    return _walk(value, rest)
