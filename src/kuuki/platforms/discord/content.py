"""What a Discord message says, as a person in the channel reads it.

discord.py's ``clean_content`` covers a plain message; the rest needs more of the payload:

- **A forward** (``message_reference.type`` 1) carries the forwarded text only in
  ``message_snapshots[0].message``; it becomes a block marked as forwarded
  (`kuuki.text.quoted`), with its author when discord.py still holds the original (a
  snapshot has no author, by design), and the users it mentions count as mentioned.
- **A crosspost** (flag ``IS_CROSSPOST``) mentions channels of another guild; the payload
  names them in ``mention_channels``, which discord.py does not keep.
- **Attachments, voice messages and stickers** leave a visible note, so a message with no
  words is not read as an empty one.

discord.py parses ``mention_channels`` and a snapshot's ``mentions`` away, so `Payloads`
keeps those two fields of the raw payloads it is shown (the gateway's MESSAGE_CREATE
frames, and every message a REST call returns: kuuki.platforms.discord.seam), for the few
messages that have them.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import discord
from discord.utils import escape_mentions

from kuuki.text.quoted import FORWARDED, quote_block, with_quotes

_MARKUP = re.compile(r"<(@[!&]?|#)([0-9]{15,20})>")
MAX_NOTES = 5  # file notes per message
UNKNOWN_USER = "@someone"


@dataclass(frozen=True, slots=True)
class Extras:
    """The fields of one message's payload discord.py does not keep."""

    channels: Mapping[int, str] = field(default_factory=dict)  # mention_channels: id → name
    quoted_users: Mapping[int, str] = field(default_factory=dict)  # snapshot mentions


NO_EXTRAS = Extras()


class Payloads:
    """`Extras` by message id, for the newest `size` messages that had any."""

    def __init__(self, size: int = 2048) -> None:
        self._kept: OrderedDict[int, Extras] = OrderedDict()
        self._size = size

    def keep(self, data: Any) -> None:
        """Note what a raw message payload says that discord.py will not keep."""
        if not isinstance(data, Mapping):
            return
        channels = {
            int(c["id"]): str(c["name"])
            for c in _list(data.get("mention_channels"))
            if isinstance(c, Mapping) and str(c.get("id", "")).isdigit() and c.get("name")
        }
        users: dict[int, str] = {}
        for snap in _list(data.get("message_snapshots"))[:1]:
            inner = snap.get("message") if isinstance(snap, Mapping) else None
            for user in _list(inner.get("mentions") if isinstance(inner, Mapping) else None):
                if isinstance(user, Mapping) and str(user.get("id", "")).isdigit():
                    users[int(user["id"])] = str(
                        user.get("global_name") or user.get("username") or UNKNOWN_USER[1:]
                    )
        if (channels or users) and str(data.get("id", "")).isdigit():
            self._kept[int(data["id"])] = Extras(channels, users)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)

    def keep_frame(self, frame: str) -> None:
        """`keep` a gateway frame's MESSAGE_CREATE payload. A frame that names neither
        field is not decoded (discord.py has decoded it already); one that cannot be is
        skipped, as the gateway skips it."""
        if "mention_channels" not in frame and "message_snapshots" not in frame:
            return
        try:
            decoded = json.loads(frame)
        except (ValueError, RecursionError):
            return
        if isinstance(decoded, Mapping) and decoded.get("t") == "MESSAGE_CREATE":
            self.keep(decoded.get("d"))

    def of(self, message_id: int) -> Extras:
        return self._kept.get(message_id, NO_EXTRAS)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def clean(
    content: str,
    guild: discord.Guild | None,
    *,
    users: Mapping[int, str],
    channels: Mapping[int, str] | None = None,
) -> str:
    """``<@id>``, ``<@&id>`` and ``<#id>`` as the client shows them, ``@everyone`` defused
    (what ``clean_content`` does, with names from the payload where the cache has none)."""

    def name(match: re.Match[str]) -> str:
        kind, ident = match[1], int(match[2])
        if kind == "#":
            found = guild._resolve_channel(ident) if guild is not None else None
            shown = getattr(found, "name", None) or (channels or {}).get(ident)
            return f"#{shown}" if shown else "#deleted-channel"
        if kind == "@&":
            role = guild.get_role(ident) if guild is not None else None
            return f"@{role.name}" if role else "@deleted-role"
        member = guild.get_member(ident) if guild is not None else None
        if member is not None:
            return f"@{member.display_name}"
        return f"@{users[ident]}" if ident in users else UNKNOWN_USER

    return escape_mentions(_MARKUP.sub(name, content))


def notes(attachments: list[discord.Attachment], stickers: list[Any], flags: Any) -> list[str]:
    """A visible note per attachment (a voice message says so, with its length) and
    sticker."""
    out: list[str] = []
    for a in attachments[:MAX_NOTES]:
        if flags.voice or a.is_voice_message():
            secs = int(a.duration or 0)
            out.append(f"[voice message {secs // 60}:{secs % 60:02d}]")
        else:
            out.append(f"[file: {a.filename}]")
    out += [f"[sticker: {s.name}]" for s in stickers[:MAX_NOTES]]
    return out


def text_of(message: discord.Message, extras: Extras = NO_EXTRAS) -> str:
    """The message as the channel reads it: its words, its notes, what it forwards."""
    users = {u.id: u.display_name for u in message.mentions}
    own = clean(message.content, message.guild, users=users, channels=extras.channels)
    own = " ".join([own, *notes(message.attachments, message.stickers, message.flags)]).strip()
    blocks = [
        quote_block(FORWARDED, _snapshot_text(snap, message.guild, extras),
                    author=_snapshot_author(snap))
        for snap in message.message_snapshots[:1]
    ]
    return with_quotes(own, blocks)


def _snapshot_text(snap: discord.MessageSnapshot, guild: discord.Guild | None,
                   extras: Extras) -> str:
    words = clean(snap.content, guild, users=extras.quoted_users, channels=extras.channels)
    return " ".join([words, *notes(snap.attachments, snap.stickers, snap.flags)]).strip()


def _snapshot_author(snap: discord.MessageSnapshot) -> str | None:
    original = snap.cached_message
    return original.author.display_name if original is not None else None


def mentioned_in_forward(message: discord.Message) -> list[int]:
    """The users a forwarded message mentions (its text is read as part of this one)."""
    return [i for snap in message.message_snapshots[:1] for i in snap.raw_mentions]
