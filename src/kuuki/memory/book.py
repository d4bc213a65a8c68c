"""The memory documents the summarizer writes, cached so prompts never wait on the store.

Kinds of documents (scope, scope id, kind):

    workspace  <workspace>            long_term | short_term   text, from public channels only
    channel    <channel id>           long_term | short_term   text
    channel    <channel id>           context                  ChannelContext JSON
    thread     <channel id>:<thread>  summary                  text
    user       <user id>              profile                  UserProfile JSON

Every document carries the visibility, workspace and source channel of what it was made
from; `MemoryBook.visible` applies the privacy rule before anything reaches a prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from kuuki.domain import Channel, Visibility
from kuuki.memory.privacy import ChannelRegistry, may_show
from kuuki.store.records import MemoryDocument, MemoryRecord

Key = tuple[str, str, str]


class MemoryStorePort(Protocol):
    """The part of the Store the book uses."""

    async def set_memory(
        self,
        scope: str,
        scope_id: str,
        kind: str,
        content: Any,
        *,
        visibility: Visibility = Visibility.PRIVATE,
        workspace: str = "default",
        source_channel_id: str | None = None,
        source_user_ids: Sequence[str] = (),
        at: datetime | None = None,
    ) -> bool | None: ...

    async def set_memories(
        self,
        scope: str,
        kind: str,
        documents: Sequence[MemoryDocument],
        *,
        visibility: Visibility = Visibility.PRIVATE,
        workspace: str = "default",
        at: datetime | None = None,
    ) -> int: ...

    async def memories(
        self, scope: str, scope_id: str | None = None, *, kind: str | None = None
    ) -> list[MemoryRecord]: ...

    async def delete_memory(self, scope: str, scope_id: str, kind: str) -> bool: ...


def thread_key(channel_id: str, thread: str) -> str:
    return f"{channel_id}:{thread}"


class MemoryBook:
    """Write-through cache of workspace, channel and thread memory documents."""

    SCOPES = ("workspace", "channel", "thread")

    def __init__(self, store: MemoryStorePort, registry: ChannelRegistry) -> None:
        self.store = store
        self.registry = registry
        self._docs: dict[Key, MemoryRecord] = {}

    async def load(self) -> int:
        self._docs.clear()
        for scope in self.SCOPES:
            for rec in await self.store.memories(scope):
                self._docs[(rec.scope, rec.scope_id, rec.kind)] = rec
        return len(self._docs)

    def get(self, scope: str, scope_id: str, kind: str) -> MemoryRecord | None:
        return self._docs.get((scope, scope_id, kind))

    def text(self, scope: str, scope_id: str, kind: str) -> str:
        rec = self.get(scope, scope_id, kind)
        return rec.content if rec is not None and isinstance(rec.content, str) else ""

    async def put(
        self,
        scope: str,
        scope_id: str,
        kind: str,
        content: Any,
        *,
        visibility: Visibility,
        workspace: str,
        source_channel_id: str | None,
        source_user_ids: Sequence[str],
        at: datetime,
    ) -> bool:
        """Store a document; False (and no write) when it did not change."""
        old = self.get(scope, scope_id, kind)
        if (
            old is not None
            and old.content == content
            and old.visibility is visibility
            and tuple(old.source_user_ids) == tuple(source_user_ids)
        ):
            return False
        stored = await self.store.set_memory(
            scope,
            scope_id,
            kind,
            content,
            visibility=visibility,
            workspace=workspace,
            source_channel_id=source_channel_id,
            source_user_ids=source_user_ids,
            at=at,
        )
        if stored is False:  # refused: it came from a forgotten person
            return False
        self._docs[(scope, scope_id, kind)] = MemoryRecord(
            scope=scope,
            scope_id=scope_id,
            kind=kind,
            content=content,
            visibility=visibility,
            source_channel_id=source_channel_id,
            source_user_ids=tuple(source_user_ids),
            workspace=workspace,
            updated_at=at,
        )
        return True

    def visible(self, target: Channel, rec: MemoryRecord | None) -> bool:
        return rec is not None and may_show(
            target,
            source_channel_id=rec.source_channel_id,
            visibility=rec.visibility,
            workspace=rec.workspace,
            registry=self.registry,
        )

    @staticmethod
    def visible_everywhere(rec: MemoryRecord | None, workspace: str) -> bool:
        """True for a document every channel of ``workspace`` may see (public source)."""
        return (
            rec is not None
            and rec.visibility is Visibility.PUBLIC
            and rec.workspace == workspace
            and isinstance(rec.content, str)
        )

    def threads_of(self, channel_id: str, limit: int = 5) -> list[MemoryRecord]:
        prefix = f"{channel_id}:"
        found = [
            rec
            for (scope, scope_id, _), rec in self._docs.items()
            if scope == "thread" and scope_id.startswith(prefix)
        ]
        found.sort(key=lambda r: r.updated_at)
        return found[-limit:]
