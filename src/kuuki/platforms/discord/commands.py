"""`/kuuki …` as a discord.py app command group, answered by the platform-neutral
`kuuki.platforms.commands.run_command`. This module only translates: who asked, where, with which
permission, and shows the reply (ephemeral when the reply says so)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import discord
from discord import app_commands

from kuuki.domain import Channel
from kuuki.engine.core import Engine
from kuuki.platforms.commands import CommandReply, MemoryAdmin, PolicyAdmin, run_command
from kuuki.platforms.discord.mapping import (
    TEXT_LIMIT,
    allowed_mentions,
    channel_of,
    fallback_channel,
    user_of,
)
from kuuki.text.safety import defuse_mentions

log = logging.getLogger("kuuki.discord")

ChannelResolver = Callable[[discord.Interaction[Any]], Awaitable[Channel]]


async def interaction_channel(interaction: discord.Interaction[Any]) -> Channel:
    channel = interaction.channel
    if channel is None:
        return fallback_channel(interaction.channel_id or 0, interaction.guild_id)
    return channel_of(channel)


def kuuki_group(
    engine: Engine,
    *,
    memory: MemoryAdmin | None = None,
    resolve: ChannelResolver = interaction_channel,
    policies: PolicyAdmin | None = None,
) -> app_commands.Group:
    """The `/kuuki` command group: status, why, quiet <minutes>, mode [setting], memory,
    forget-me, remember-me."""
    group = app_commands.Group(name="kuuki", description="Ask kuuki about itself in this channel")

    answer = _Answer(engine, memory, resolve, policies)

    @group.command(name="status", description="Am I listening here, and how much have I used?")
    async def status(interaction: discord.Interaction[Any]) -> None:
        await answer(interaction, "status")

    @group.command(name="why", description="Why I last did (or did not) speak here")
    async def why(interaction: discord.Interaction[Any]) -> None:
        await answer(interaction, "why")

    @group.command(name="quiet", description="Stay quiet here unless addressed (manage channel)")
    @app_commands.describe(minutes="How long, in minutes (0 ends it)")
    async def quiet(
        interaction: discord.Interaction[Any],
        minutes: app_commands.Range[int, 0, 10080],
    ) -> None:
        await answer(interaction, "quiet", [str(minutes)])

    @group.command(name="mode", description="My manners here; change them (manage channel)")
    @app_commands.describe(setting="listen, asked, member, key=value …, or reset")
    async def mode(interaction: discord.Interaction[Any], setting: str | None = None) -> None:
        await answer(interaction, "mode", setting.split() if setting else [])

    @group.command(name="memory", description="What I remember about you (only you see it)")
    async def memory_cmd(interaction: discord.Interaction[Any]) -> None:
        await answer(interaction, "memory")

    @group.command(name="forget-me", description="Forget what I remember about you")
    async def forget_me(interaction: discord.Interaction[Any]) -> None:
        await answer(interaction, "forget-me")

    @group.command(name="remember-me", description="Let me remember you again after forget-me")
    async def remember_me(interaction: discord.Interaction[Any]) -> None:
        await answer(interaction, "remember-me")

    return group


class _Answer:
    """Runs one `/kuuki` command for an interaction and answers it; a command that fails is
    logged and answered with an apology."""

    def __init__(
        self, engine: Engine, memory: MemoryAdmin | None, resolve: ChannelResolver,
        policies: PolicyAdmin | None = None,
    ) -> None:
        self.engine = engine
        self.policies = policies
        self.memory = memory
        self.resolve = resolve

    async def __call__(
        self, interaction: discord.Interaction[Any], name: str, args: Sequence[str] = ()
    ) -> None:
        try:
            channel = await self.resolve(interaction)
            perms = interaction.permissions
            reply = await run_command(
                self.engine,
                channel,
                user_of(interaction.user),
                name,
                args,
                can_manage_channel=perms.manage_channels,
                memory=self.memory,
                policies=self.policies,
            )
        except Exception:
            log.exception("/kuuki %s failed", name)
            reply = CommandReply("Sorry, that did not work; it has been logged.", ok=False)
        await interaction.response.send_message(
            defuse_mentions(reply.text)[:TEXT_LIMIT],
            ephemeral=reply.ephemeral,
            allowed_mentions=allowed_mentions(reply=False),
        )
