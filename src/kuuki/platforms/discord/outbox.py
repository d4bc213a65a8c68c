"""`DiscordOutbox`: the engine's actions, performed through discord.py.

The outbox exists before the client (``build_app`` needs it first) and is bound to the
client once the client has logged in; an action before that raises, and the engine records
the failure in the decision's trace.

Presentation only, no decisions: text is defused (no @everyone/@here/role pings) and split
at 2,000 characters on paragraph/line/sentence boundaries; a reply is sent as a Discord
reply (message reference) only when other messages came after the one it answers, where a
plain message would read as answering the wrong thing; ``allowed_mentions`` never lets a
message ping everyone, here or roles.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator

import discord

from kuuki.domain import Action, ActionKind, Channel, Message, User
from kuuki.platforms.discord.mapping import TEXT_LIMIT, allowed_mentions
from kuuki.text.safety import defuse_mentions, split_text

log = logging.getLogger("kuuki.discord")

_MEMORY = 10_000  # message ids remembered for part aliases and "latest message" tracking


class DiscordOutbox:
    """Implements the engine's `Outbox` for Discord (see module docstring)."""

    def __init__(self, *, text_limit: int = TEXT_LIMIT) -> None:
        self.text_limit = text_limit
        self.client: discord.Client | None = None
        self.bound = asyncio.Event()  # set once `client` is (run_discord made and bound it)
        self._latest: OrderedDict[str, str] = OrderedDict()  # channel id → last message id
        self._part_of: OrderedDict[str, str] = OrderedDict()  # later part id → first part id

    def bind(self, client: discord.Client) -> None:
        """The connected client (kuuki.platforms.discord.client) the outbox posts through."""
        self.client = client
        self.bound.set()

    # -- what the client tells the outbox ----------------------------------------------------

    def saw(self, channel_id: str, message_id: str) -> None:
        """A message (anyone's) appeared in a channel; replies read by what came after."""
        self._latest[channel_id] = message_id
        self._latest.move_to_end(channel_id)
        if len(self._latest) > _MEMORY:
            self._latest.popitem(last=False)

    def first_part(self, message_id: str) -> str:
        """The id the engine knows for a message the bot sent in several parts."""
        return self._part_of.get(message_id, message_id)

    # -- Outbox ----------------------------------------------------------------------------

    async def send(self, channel: Channel, action: Action) -> Message | None:
        client = self._client()
        target = client.get_partial_messageable(int(channel.id))
        if action.kind is ActionKind.REACT:
            if action.target_message_id is None or not action.emoji:
                raise ValueError("a reaction needs a target message and an emoji")
            partial = target.get_partial_message(int(action.target_message_id))
            await partial.add_reaction(action.emoji)
            return None
        parts = split_text(defuse_mentions(action.text or ""), self.text_limit)
        if not parts:
            return None
        reference = self._reference(channel, action)
        sent: list[discord.Message] = []
        for i, part in enumerate(parts):
            if i == 0 and reference is not None:
                sent.append(
                    await target.send(
                        part, reference=reference, allowed_mentions=allowed_mentions(reply=True)
                    )
                )
            else:
                sent.append(await target.send(part, allowed_mentions=allowed_mentions(reply=False)))
        first = sent[0]
        for extra in sent[1:]:
            self._part_of[str(extra.id)] = str(first.id)
            if len(self._part_of) > _MEMORY:
                self._part_of.popitem(last=False)
        self.saw(channel.id, str(sent[-1].id))
        bot = client.user
        assert bot is not None
        return Message(
            id=str(first.id),
            channel_id=channel.id,
            user=User(str(bot.id), bot.display_name, is_bot=True),
            text="\n".join(parts),
            ts=first.created_at,
            reply_to=action.reply_to,
            thread=action.thread,
        )

    @contextlib.asynccontextmanager
    async def typing(self, channel: Channel) -> AsyncIterator[None]:
        """Discord's indicator for the body's duration; a failure to show it costs nothing."""
        indicator = None
        if self.client is not None:
            indicator = self.client.get_partial_messageable(int(channel.id)).typing()
            try:
                await indicator.__aenter__()
            except Exception as exc:
                log.warning("typing indicator failed in %s: %s", channel.id, exc)
                indicator = None
        try:
            yield
        finally:
            if indicator is not None:
                with contextlib.suppress(Exception):
                    await indicator.__aexit__(None, None, None)

    # -- helpers -----------------------------------------------------------------------------

    def _client(self) -> discord.Client:
        if self.client is None:
            raise RuntimeError("the Discord client is not connected yet")
        return self.client

    def _reference(self, channel: Channel, action: Action) -> discord.MessageReference | None:
        answered = action.reply_to
        if answered is None or self._latest.get(channel.id) in (None, answered):
            return None
        return discord.MessageReference(
            message_id=int(answered), channel_id=int(channel.id), fail_if_not_exists=False
        )
