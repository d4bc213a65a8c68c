"""The channel context ("the air of the room"): rolling summary, mood, topics, who is here.

Seed 002's data shape, kept as the ``channel/<id>/context`` memory document and rendered
into prompts as 【このチャンネルの状況】 話題 / 雰囲気 / 参加者 / 直近の流れ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kuuki.memory.context import ChannelContextView

MAX_ACTIVE_USERS = 8


@dataclass(slots=True)
class ChannelContext:
    """What the bot currently understands about one channel."""

    channel_id: str
    summary: str = ""
    mood: str = ""
    topic_keywords: list[str] = field(default_factory=list)
    active_users: list[str] = field(default_factory=list)  # display names, newest last
    active_user_ids: list[str] = field(default_factory=list)
    last_updated: datetime | None = None
    message_count_since_update: int = 0

    @property
    def empty(self) -> bool:
        return not self.summary

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "mood": self.mood,
            "topicKeywords": list(self.topic_keywords),
            "activeUsers": list(self.active_users),
            "activeUserIds": list(self.active_user_ids),
            "lastUpdated": self.last_updated.isoformat() if self.last_updated else None,
            "messageCountSinceUpdate": self.message_count_since_update,
        }

    @classmethod
    def from_json(cls, channel_id: str, data: Any) -> ChannelContext:
        if not isinstance(data, dict):
            return cls(channel_id)
        updated = data.get("lastUpdated")
        return cls(
            channel_id=channel_id,
            summary=str(data.get("summary") or ""),
            mood=str(data.get("mood") or ""),
            topic_keywords=[str(x) for x in data.get("topicKeywords") or []],
            active_users=[str(x) for x in data.get("activeUsers") or []],
            active_user_ids=[str(x) for x in data.get("activeUserIds") or []],
            last_updated=datetime.fromisoformat(updated) if updated else None,
            message_count_since_update=int(data.get("messageCountSinceUpdate") or 0),
        )

    def note_speaker(self, user_id: str, name: str) -> None:
        """Move a speaker to the end of the active list (cheap, done on every message)."""
        if user_id in self.active_user_ids:
            i = self.active_user_ids.index(user_id)
            del self.active_user_ids[i]
            del self.active_users[i]
        self.active_user_ids.append(user_id)
        self.active_users.append(name)
        while len(self.active_user_ids) > MAX_ACTIVE_USERS:
            self.active_user_ids.pop(0)
            self.active_users.pop(0)

    def view(self, language: str) -> ChannelContextView | None:
        if self.empty:
            return None
        sep = "、" if language == "ja" else ", "
        return ChannelContextView(
            topics=sep.join(self.topic_keywords),
            mood=self.mood,
            participants=sep.join(self.active_users),
            summary=self.summary,
        )
