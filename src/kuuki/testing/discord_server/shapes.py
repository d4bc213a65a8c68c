"""Message payloads beyond a plain post, shaped as Discord's documentation gives them
(developers/resources/message.mdx in discord/discord-api-docs): a forward, a crosspost
from a followed announcement channel, attachments and a voice message. Pure builders: the
gateway (`DiscordGateway.deliver`) stores and dispatches what they return.
"""

from __future__ import annotations

from typing import Any

Payload = dict[str, Any]

IS_CROSSPOST = 1 << 1
IS_VOICE_MESSAGE = 1 << 13
HAS_SNAPSHOT = 1 << 14
FORWARD = 1  # message_reference.type
SNAPSHOT_FIELDS = ("type", "content", "embeds", "attachments", "timestamp",
                   "edited_timestamp", "flags", "mentions", "mention_roles", "components")


def forward(base: Payload, original: Payload) -> Payload:
    """``base`` (an empty post) made into a forward of ``original``: the text lives only in
    ``message_snapshots[0].message``, which has no author (Discord leaves it out)."""
    return base | {
        "content": "",
        "flags": HAS_SNAPSHOT,
        "mentions": [],
        "message_reference": {
            "type": FORWARD,
            "message_id": original["id"],
            "channel_id": original["channel_id"],
            "guild_id": original.get("guild_id"),
        },
        "message_snapshots": [{"message": {k: original.get(k) for k in SNAPSHOT_FIELDS}}],
    }


def crosspost(
    base: Payload, *, source_guild: str, source_channel: str, source_message: str,
    channel_name: str,
) -> Payload:
    """``base`` made into a crosspost of an announcement followed from another guild: a
    webhook author, flag IS_CROSSPOST, a type-0 reference into the other guild, and the
    channels its text mentions named in ``mention_channels``."""
    author = base["author"] | {"bot": True, "discriminator": "0000"}
    return base | {
        "author": author,
        "webhook_id": author["id"],
        "flags": IS_CROSSPOST,
        "message_reference": {
            "type": 0,
            "channel_id": source_channel,
            "guild_id": source_guild,
            "message_id": source_message,
        },
        "mention_channels": [
            {"id": source_channel, "guild_id": source_guild, "name": channel_name, "type": 5}
        ],
    }


def attachment(aid: str, filename: str, *, content_type: str = "image/png",
               duration_secs: float | None = None) -> Payload:
    out: Payload = {
        "id": aid,
        "filename": filename,
        "size": 18_342,
        "url": f"https://cdn.discordapp.com/attachments/0/{aid}/{filename}",
        "proxy_url": f"https://media.discordapp.net/attachments/0/{aid}/{filename}",
        "content_type": content_type,
    }
    if duration_secs is not None:
        out |= {"duration_secs": duration_secs, "waveform": "AAAAAAAAAAAA"}
    return out


def with_files(base: Payload, files: list[Payload], *, voice: bool = False) -> Payload:
    """``base`` carrying ``files``; a voice message has one audio file, no text, and the
    IS_VOICE_MESSAGE flag."""
    flags = base.get("flags", 0) | (IS_VOICE_MESSAGE if voice else 0)
    return base | {"attachments": files, "flags": flags} | ({"content": ""} if voice else {})
