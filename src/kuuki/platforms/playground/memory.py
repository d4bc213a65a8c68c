"""The memory panel's port: what the bot remembers about a channel, as one JSON-able dict.

The panel shows four sections — channel summary, facts, user profiles, proactive ledger —
from whatever a `MemorySnapshot` returns. The memory package can hand the playground its
own provider: `create_app(memory=...)`, or a `snapshot(channel_id)` coroutine method on the
App's memory service, which the playground picks up by itself. Without either,
`StoreMemorySnapshot` reads what the store's memory tables hold, and reads nothing where the
store lacks a method (an older store shows an empty panel instead of an error).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, Protocol

MemorySnapshot = Callable[[str], Awaitable[dict[str, Any]]]
"""``await snapshot(channel_id)`` → ``{"summary": …, "facts": […], "profiles": […],
"proactive": […]}``. Every value must be JSON-serialisable (``default=str`` is applied);
unknown extra keys are shown as further sections. It may raise; the panel shows the error.
"""

SECTIONS = ("summary", "facts", "profiles", "proactive")


class _Clock(Protocol):
    def now(self) -> datetime: ...


def empty_snapshot() -> dict[str, Any]:
    return {"summary": None, "facts": [], "profiles": [], "proactive": []}


class StoreMemorySnapshot:
    """Default provider: the store's `memories`/`facts` tables, as far as the store has them."""

    def __init__(self, store: Any, clock: _Clock) -> None:
        self.store = store
        self.clock = clock

    async def __call__(self, channel_id: str) -> dict[str, Any]:
        out = empty_snapshot()
        store = self.store
        if store is None:
            return out
        if hasattr(store, "memories"):
            channel_docs = await store.memories("channel", channel_id)
            summaries = [
                {"kind": m.kind, "content": m.content, "updated_at": m.updated_at}
                for m in channel_docs
            ]
            if len(summaries) == 1 and summaries[0]["kind"] == "summary":
                out["summary"] = summaries[0]["content"]
            elif summaries:
                out["summary"] = summaries
            out["profiles"] = [
                {
                    "user": m.scope_id,
                    "kind": m.kind,
                    "content": m.content,
                    "updated_at": m.updated_at,
                }
                for m in await store.memories("user")
            ]
        if hasattr(store, "facts"):
            out["facts"] = [
                {
                    "id": f.id,
                    "content": f.content,
                    "confidence": round(f.confidence, 2),
                    "source_channel": f.source_channel_id,
                    "users": list(f.source_user_ids),
                    "visibility": str(f.visibility),
                    "last_used_at": f.last_used_at,
                }
                for f in await store.facts()
            ]
        out["proactive"] = await self._proactive(channel_id)
        return out

    async def _proactive(self, channel_id: str) -> list[Any]:
        store = self.store
        ledger = getattr(store, "proactive_ledger", None)
        if ledger is not None:
            return list(await ledger(channel_id))
        if hasattr(store, "proactive_count"):
            since = self.clock.now() - timedelta(days=1)
            count = await store.proactive_count(channel_id, since)
            return [{"channel": channel_id, "volunteered_last_24h": count}] if count else []
        return []
