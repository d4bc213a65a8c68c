"""Step 1, the filter: what the engine takes in at all, and whose messages are its own.

Decided here and nowhere else in the engine:

- whether a channel is listened to: the allow/deny lists (a thread follows its parent
  channel) and, for adapters and `/kuuki status`, the DM policy (`listening`);
- whether a message is the bot's own: its author is one of the bot's user ids (the
  persona's name, and the platform ids adapters add once logged in). The bot's own
  messages join the timeline (record, steps 2-4) and are not judged;
- the text as the engine keeps it: cleaned at the door (kuuki.text.safety);
- whether the bot is in shadow mode in a channel (`shadowed`: it decides but never posts).

A message in a channel that is not allowed leaves nothing behind, not even in the store.
The decision pipeline keeps its own first stages (kuuki.decide.stages: own_message, filter, quiet:
the loop guard, the DM policy and empty messages, with their results in every trace).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from kuuki.domain import Channel, Message, User, Visibility
from kuuki.engine.config import EngineConfig
from kuuki.text.safety import clean_incoming


@dataclass(frozen=True, slots=True)
class Admitted:
    """A posted message the filter let in: cleaned, and whether it is the bot's own."""

    message: Message
    own: bool


class MessageFilter:
    """Step 1 (module doc). ``bot_user_ids`` is shared with the engine, which lets adapters
    add the bot's platform id to it."""

    def __init__(
        self, config: EngineConfig, bot_user_ids: set[str],
        listen_only: Callable[[Channel], bool] | None = None,
    ) -> None:
        self.config = config
        self.bot_user_ids = bot_user_ids
        # A channel's policy may say "listen" at any time (`/kuuki mode`): asked per message.
        self.listen_only = listen_only

    def allowed(self, channel: Channel) -> bool:
        """The channel allow/deny lists (a thread follows its parent channel)."""
        keys = set(channel.names)
        if self.config.channel_allow and not keys & set(self.config.channel_allow):
            return False
        return not keys & set(self.config.channel_deny)

    def denies_id(self, channel_id: str) -> bool:
        """Denied by its id alone (an adapter asks before it looks the channel up)."""
        return channel_id in self.config.channel_deny

    def listening(self, channel: Channel) -> bool:
        """Does the bot listen in ``channel`` at all (the lists and the DM policy)?"""
        if not self.allowed(channel):
            return False
        return not (channel.visibility is Visibility.DM and not self.config.dms_enabled)

    def shadowed(self, channel: Channel) -> bool:
        """Is the bot in shadow mode in ``channel`` (everywhere, by the channel's list, or
        by its policy)?"""
        if self.config.shadow:
            return True
        if self.listen_only is not None and self.listen_only(channel):
            return True
        return bool(self.config.shadow_channels) and bool(
            set(channel.names) & set(self.config.shadow_channels))

    def is_own(self, user: User) -> bool:
        return user.id in self.bot_user_ids

    @staticmethod
    def clean(text: str) -> str:
        """Incoming text as the engine keeps it (a message's, or an edit's)."""
        return clean_incoming(text)

    def admit(self, channel: Channel, raw: Message) -> Admitted | None:
        """The posted message as the engine keeps it, or None where it must not listen."""
        if not self.allowed(channel):
            return None
        text = self.clean(raw.text)
        msg = raw if text == raw.text else replace(raw, text=text)  # frozen: shared when clean
        return Admitted(msg, self.is_own(msg.user))
