"""`/kuuki <subcommand> [args]` on Slack: parse the slash command payload, run the shared
command, and say how the reply should be shown.

Who "can manage the channel": Slack gives bots no per-channel manager role outside
Enterprise Grid, so workspace admins and owners (``users.info`` ``is_admin`` / ``is_owner``)
are the ones who may make the bot quiet or change its manners in a channel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuuki.engine.core import Engine
from kuuki.platforms.commands import (
    COMMANDS,
    CommandReply,
    MemoryAdmin,
    PolicyAdmin,
    run_command,
)
from kuuki.platforms.slack.mapping import MalformedPayload
from kuuki.platforms.slack.names import Directory, escape
from kuuki.text.safety import defuse_mentions

COMMAND = "/kuuki"
USAGE = (
    "Usage: /kuuki status | why | quiet <minutes> (0 ends it) | mode [listen|asked|member "
    "| key=value … | reset] | memory | forget-me | remember-me\n"
    f"Commands: {', '.join(COMMANDS)}"
)


def parse(text: str) -> tuple[str, list[str]]:
    words = text.split()
    if not words:
        return "help", []
    return words[0].lower(), words[1:]


async def run_slash(
    engine: Engine,
    directory: Directory,
    body: Mapping[str, Any],
    *,
    memory: MemoryAdmin | None = None,
    policies: PolicyAdmin | None = None,
) -> CommandReply:
    """Run one ``/kuuki`` payload; raises MalformedPayload when it names no user or channel."""
    channel_id, user_id = body.get("channel_id"), body.get("user_id")
    if not isinstance(channel_id, str) or not isinstance(user_id, str):
        raise MalformedPayload("slash_commands", "missing channel_id or user_id")
    text = body.get("text")
    name, args = parse(text if isinstance(text, str) else "")
    if name == "help":
        return CommandReply(USAGE)
    channel = await directory.channel(channel_id)
    info = await directory.user_info(user_id, fresh=True)
    return await run_command(
        engine,
        channel,
        info.user,
        name,
        args,
        can_manage_channel=info.is_admin,
        memory=memory,
        policies=policies,
    )


def response_of(reply: CommandReply) -> dict[str, Any]:
    """The ``respond`` arguments for a reply: ephemeral unless the whole channel should see."""
    return {
        "text": escape(defuse_mentions(reply.text)),
        "response_type": "ephemeral" if reply.ephemeral else "in_channel",
    }
