"""Discord models → kuuki domain values. Pure translation: no I/O, no decisions.

Conventions (the rest of the adapter relies on them):

- A guild text channel, a thread and a DM are each a kuuki `Channel` with the Discord
  channel id; a thread is its own Channel, and its messages carry ``thread`` = thread id,
  so a reply lands in the thread. A thread's Channel takes its parent's name, so allow and
  deny lists written with channel names cover the channel's threads (the domain Channel
  has no parent). The workspace is the guild id ("dm" for DMs).
- Event ids: the message id for a post (the same id a RESUME would redeliver), and
  ``edit:<id>:<edited_timestamp>``, ``delete:<id>``, ``reaction:<id>:<user>:<emoji>`` for
  the others, so each delivery of the same change is handled once.
"""

from __future__ import annotations

from datetime import UTC, datetime

import discord

from kuuki.domain import Channel, ChatEvent, EventKind, Message, User, Visibility
from kuuki.platforms.discord.content import NO_EXTRAS, Extras, mentioned_in_forward, text_of

PLATFORM = "discord"
TEXT_LIMIT = 2000
# Messages people write; system notices (joins, pins, thread starters, boosts) are not.
CHAT_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})

AnyChannel = (
    discord.abc.GuildChannel
    | discord.Thread
    | discord.abc.PrivateChannel
    | discord.PartialMessageable
)


def user_of(author: discord.abc.User | discord.Member, *, webhook: bool = False) -> User:
    name = getattr(author, "display_name", None) or author.name
    return User(str(author.id), name, is_bot=author.bot or webhook)


def visibility_of(channel: AnyChannel) -> Visibility:
    """Best effort: public unless @everyone cannot see it (or it is a private thread)."""
    if isinstance(channel, discord.DMChannel | discord.GroupChannel):
        return Visibility.DM
    if isinstance(channel, discord.PartialMessageable):
        return Visibility.DM if channel.guild is None else Visibility.PUBLIC
    if isinstance(channel, discord.Thread):
        if channel.type is discord.ChannelType.private_thread:
            return Visibility.PRIVATE
        parent = channel.parent
        return visibility_of(parent) if parent is not None else Visibility.PUBLIC
    if isinstance(channel, discord.abc.GuildChannel):
        everyone = channel.guild.default_role
        return (
            Visibility.PUBLIC
            if channel.permissions_for(everyone).view_channel
            else (Visibility.PRIVATE)
        )
    return Visibility.PUBLIC


def channel_of(channel: AnyChannel) -> Channel:
    guild = getattr(channel, "guild", None)
    if isinstance(channel, discord.DMChannel):
        who = channel.recipient.name if channel.recipient else str(channel.id)
        name = f"@{who}"
    elif isinstance(channel, discord.Thread) and channel.parent is not None:
        name = channel.parent.name
    else:
        name = getattr(channel, "name", None) or str(channel.id)
    # A thread knows its parent's id even when discord.py has not cached the parent; the
    # messages of a Channel with a parent are in that thread (`message_of`).
    parent = str(channel.parent_id) if isinstance(channel, discord.Thread) else None
    return Channel(
        id=str(channel.id),
        name=name,
        visibility=visibility_of(channel),
        workspace=str(guild.id) if guild is not None else "dm",
        platform=PLATFORM,
        parent_id=parent,
    )


def parent_of(channel: AnyChannel) -> Channel | None:
    """The channel a thread lives in (for allow/deny lists written for the parent)."""
    if isinstance(channel, discord.Thread) and channel.parent is not None:
        return channel_of(channel.parent)
    return None


def fallback_channel(channel_id: int, guild_id: int | None) -> Channel:
    """A channel discord.py has not cached (and that could not be fetched)."""
    return Channel(
        id=str(channel_id),
        name=str(channel_id),
        visibility=Visibility.PUBLIC if guild_id is not None else Visibility.DM,
        workspace=str(guild_id) if guild_id is not None else "dm",
        platform=PLATFORM,
    )


def mentions_of(message: discord.Message, bot_id: int | None) -> tuple[str, ...]:
    """Who the message pings: the ``<@id>`` in its text and what Discord reports
    (``mentions[]`` has the author of the message replied to when the reply pings), the
    users a forwarded message mentions, and the bot when this replies to the bot."""
    found = [*message.raw_mentions, *(u.id for u in message.mentions),
             *mentioned_in_forward(message)]
    replied = message.reference.resolved if message.reference is not None else None
    if bot_id is not None and isinstance(replied, discord.Message) \
            and replied.author.id == bot_id and reply_to_of(message) is not None:
        found.append(bot_id)
    ids = list(dict.fromkeys(str(i) for i in found))
    # People often ping the bot's managed role instead of the bot; it means the same.
    guild = message.guild
    self_role = guild.self_role if guild is not None else None
    if (
        bot_id is not None
        and self_role is not None
        and self_role.id in message.raw_role_mentions
        and str(bot_id) not in ids
    ):
        ids.append(str(bot_id))
    return tuple(ids)


def reply_to_of(message: discord.Message) -> str | None:
    """The message this one replies to. Only a reply (type 19) is one: a forward points at
    what it forwards, a crosspost at its original in another guild."""
    ref = message.reference
    if (
        message.type is not discord.MessageType.reply
        or ref is None
        or ref.message_id is None
        or ref.type is not discord.MessageReferenceType.reply
        or ref.channel_id != message.channel.id
    ):
        return None
    return str(ref.message_id)


def message_of(
    message: discord.Message, channel: Channel, *, bot_id: int | None,
    extras: Extras = NO_EXTRAS,
) -> Message:
    """`channel` is the message's kuuki Channel, resolved by the client (fetched when
    discord.py has no thread object: ``message.channel`` is then only a partial one)."""
    thread = channel.id if channel.parent_id is not None else None
    return Message(
        id=str(message.id),
        channel_id=channel.id,
        user=user_of(message.author, webhook=message.webhook_id is not None),
        text=text_of(message, extras),
        ts=message.created_at,
        reply_to=reply_to_of(message),
        thread=thread,
        mentions=mentions_of(message, bot_id),
        edited=message.edited_at is not None,
    )


def posted(
    message: discord.Message, channel: Channel, *, bot_id: int | None,
    extras: Extras = NO_EXTRAS,
) -> ChatEvent:
    msg = message_of(message, channel, bot_id=bot_id, extras=extras)
    return ChatEvent(EventKind.POSTED, channel, msg.id, msg.ts, message=msg)


def edited(message: discord.Message, channel: Channel) -> ChatEvent:
    at = message.edited_at or datetime.now(UTC)
    return ChatEvent(
        EventKind.EDITED,
        channel,
        f"edit:{message.id}:{at.isoformat()}",
        at,
        target_id=str(message.id),
        user=user_of(message.author),
        text=text_of(message),
    )


def deleted(message_id: int, channel: Channel) -> ChatEvent:
    return ChatEvent(
        EventKind.DELETED,
        channel,
        f"delete:{message_id}",
        datetime.now(UTC),
        target_id=str(message_id),
    )


def reacted(payload: discord.RawReactionActionEvent, channel: Channel, user: User) -> ChatEvent:
    emoji = str(payload.emoji)
    return ChatEvent(
        EventKind.REACTION_ADDED,
        channel,
        f"reaction:{payload.message_id}:{payload.user_id}:{emoji}",
        datetime.now(UTC),
        target_id=str(payload.message_id),
        user=user,
        emoji=emoji,
    )


def allowed_mentions(*, reply: bool) -> discord.AllowedMentions:
    """Who a message of the bot's may ping: the users it names, never everyone or a role."""
    return discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=reply)
