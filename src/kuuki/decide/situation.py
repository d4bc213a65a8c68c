"""What step 5 reads about one message, shared with the engine that fills it in: the
`Situation` around the message, the bot's own recent behaviour in the channel (`BotState`)
and how the message addresses the bot (`Addressing`). A leaf: it imports only kuuki.domain
and kuuki.ports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kuuki.domain import Channel, Message
from kuuki.ports import Tracker


@dataclass(frozen=True, slots=True)
class Addressing:
    kind: str  # "mention" | "reply" | "name" | "dm" | "thread" | ""
    detail: str = ""

    def __bool__(self) -> bool:
        return bool(self.kind)

    @property
    def implicit(self) -> bool:
        """Addressed by where it was said (a DM, the bot's own thread), not by a call."""
        return self.kind in ("dm", "thread")


@dataclass(slots=True)
class Situation:
    """What the judge may look at for one message (read-only by convention).

    ``recent`` is the channel's short-term buffer, oldest first, ending with ``message``;
    ``tracker`` is the channel's live ConversationTracker (or None when structure is off);
    ``bot`` carries the engine's per-channel facts about the bot (last reply time…).
    """

    message: Message
    channel: Channel
    addressing: Addressing
    recent: Sequence[Message]
    now: datetime
    conversation_id: str | None = None
    tracker: Tracker | None = None
    bot: BotState | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class BotState:
    """The bot's own recent behaviour in one channel."""

    user_ids: frozenset[str] = frozenset()
    last_reply_at: datetime | None = None
    last_reply_conversation: str | None = None
    # How the message the bot last answered in words addressed it ("mention", "name",
    # "context", … or "" when unasked): after answering a call, a remark closes the talk.
    last_reply_to: str = ""
    last_action_at: datetime | None = None
    quiet_until: datetime | None = None
