"""The dashboard's routes: the page, its charts' data, the latest decisions, a search.

What it shows of a conversation is the operator's to decide, not the page's: a DM's text is
never shown — DM channels count in the charts, and their decisions are not listed or found
(a search names the reason) —; a private channel's text only when ``show_private`` is set
(``[dashboard] show_private``), otherwise its decisions are counted, not listed. Every route
is a GET; nothing here changes the bot.

A decision is shown as the playground shows it: its card comes from kuuki.explain.card from
what the store kept, and the page draws it with the shared cards.js (kuuki.platforms.web).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from kuuki.domain import Visibility
from kuuki.explain.card import decision_card, decision_of
from kuuki.platforms.web import SHARED, SHARED_URL, jsonable
from kuuki.replay.runner import decision_line
from kuuki.text.wording import echoed

STATIC = Path(__file__).parent / "static"
WINDOWS = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
PAGE = 50

# The charts' data for a window (and a channel name, or None for all): the operator server
# passes the store's aggregation (kuuki.explain.stats) in.
Overview = Callable[[timedelta, str | None], Awaitable[Mapping[str, Any]]]


class DecisionSource(Protocol):
    async def recent_decisions(
        self, limit: int = 50, *, channel_id: str | None = None,
        before: datetime | None = None, message_id: str | None = None,
    ) -> list[dict[str, Any]]: ...


def dashboard_routes(
    store: DecisionSource, overview: Overview, *, bot_names: tuple[str, ...],
    show_private: bool = False,
) -> list[BaseRoute]:
    """The page at ``/``, its data under ``/api/``, its files under ``/dashboard/``."""
    shown = Shown(show_private)

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def charts(request: Request) -> Response:
        window = WINDOWS.get(request.query_params.get("window", "7d"))
        if window is None:
            return _bad(f"window must be one of {', '.join(WINDOWS)}")
        channel = request.query_params.get("channel") or None
        return JSONResponse(dict(await overview(window, channel)))

    async def decisions(request: Request) -> Response:
        rows = await store.recent_decisions(PAGE * 4)
        visible = [r for r in rows if shown.listed(r)][:PAGE]
        hidden = len(rows) - len([r for r in rows if shown.listed(r)])
        return JSONResponse({"decisions": [view(r, bot_names) for r in visible],
                             "hidden": hidden, "show_private": show_private})

    async def search(request: Request) -> Response:
        mid = request.query_params.get("message_id", "").strip()
        if not mid:
            return _bad("message_id is required")
        rows = await store.recent_decisions(PAGE, message_id=mid)
        if not rows:
            return JSONResponse({"decisions": [], "note": f"no decision stored for {echoed(mid)}"})
        if not all(shown.listed(r) for r in rows):
            return JSONResponse({"decisions": [], "note": shown.why_not(rows[0])})
        return JSONResponse({"decisions": [view(r, bot_names) for r in reversed(rows)]})

    return [
        Route("/", page, methods=["GET"]),
        Route("/api/overview", charts, methods=["GET"]),
        Route("/api/decisions", decisions, methods=["GET"]),
        Route("/api/search", search, methods=["GET"]),
        Mount("/dashboard", StaticFiles(directory=STATIC), name="dashboard"),
        Mount(SHARED_URL, StaticFiles(directory=SHARED), name="shared"),
    ]


class Shown:
    """Which channels' text the page may show (module doc)."""

    def __init__(self, show_private: bool) -> None:
        self.show_private = show_private

    def listed(self, record: Mapping[str, Any]) -> bool:
        visibility = record.get("channel_visibility")
        if visibility == Visibility.DM.value or visibility is None:
            return False  # a DM, or a channel the store does not know: counted only
        return visibility != Visibility.PRIVATE.value or self.show_private

    def why_not(self, record: Mapping[str, Any]) -> str:
        if record.get("channel_visibility") == Visibility.PRIVATE.value:
            return ("that message is in a private channel: its decisions are shown only "
                    "with [dashboard] show_private = true")
        return "that message is in a direct message: the dashboard never shows DMs"


def view(record: Mapping[str, Any], bot_names: tuple[str, ...]) -> dict[str, Any]:
    """A stored decision as the page's card takes it (the playground's shape)."""
    d = decision_of(record)
    line = decision_line(d)
    out: dict[str, Any] = jsonable({
        **line,
        "seq": record["id"],
        "channel": record.get("channel_name") or d.channel_id,
        "message_user": record.get("message_user"),
        "message_text": record.get("message_text"),
        "card": decision_card(d, bot_names),
        "trace": d.trace.to_dict(),
        "prompts": [],
    })
    return out


def _bad(reason: str) -> Response:
    return JSONResponse({"error": reason}, status_code=400)
