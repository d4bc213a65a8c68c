"""What the conversation tracker keeps of a channel and answers with: the record of one
seen message, a live conversation, and where an observed message went."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from kuuki.domain import Message

BOT_KEY = "bot:self"


@dataclass(frozen=True, slots=True)
class Assignment:
    """Where an observed message went: its conversation and the message it answers."""

    message_id: str
    conversation_id: str
    parent_id: str | None  # None when the message starts a conversation
    confidence: float


@dataclass(slots=True)
class LiveConversation:
    """One conversation of a channel as it stands now."""

    id: str
    message_ids: list[str]
    participants: list[str]  # user ids, in order of first message
    last_activity: datetime
    started_at: datetime
    topic: npt.NDArray[np.float32] | None = None  # normalised mean embedding
    _topic_sum: npt.NDArray[np.float32] | None = field(default=None, repr=False)


@dataclass(slots=True)
class Tracked:
    """One message as the tracker remembers it."""

    msg: Message
    index: int
    conversation_id: str
    parent_id: str | None
    speaker: str
    mass: dict[str, float]  # probability mass the model gave each conversation
    vector: npt.NDArray[np.float32] | None
