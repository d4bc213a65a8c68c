"""The `/kuuki` commands, platform-neutral: adapters parse the platform's slash command,
call `run_command`, and show the reply (ephemeral where the platform allows)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kuuki.domain import Channel, User
from kuuki.errors import ConfigError
from kuuki.explain.models import model_lines
from kuuki.ports import EngineCommands
from kuuki.settings.policy import MODES, ChannelPolicy

COMMANDS = ("status", "why", "quiet", "mode", "memory", "forget-me", "remember-me")
MAX_QUIET_MINUTES = 7 * 24 * 60


class MemoryAdmin(Protocol):
    """What a user may ask of the memory layer about themselves."""

    async def describe_user(self, user_id: str) -> str: ...

    async def forget_user(self, user_id: str) -> int: ...

    async def unforget_user(self, user_id: str) -> bool: ...


class PolicyAdmin(Protocol):
    """Each channel's policy (kuuki.app.policies.ChannelPolicies): read it, change it."""

    def of(self, channel: Channel) -> ChannelPolicy: ...

    async def change(
        self, channel: Channel, values: Mapping[str, Any], by: User
    ) -> ChannelPolicy: ...

    async def reset(self, channel: Channel, by: User) -> ChannelPolicy: ...


@dataclass(frozen=True, slots=True)
class CommandReply:
    text: str
    ephemeral: bool = True
    ok: bool = True


async def run_command(
    engine: EngineCommands,
    channel: Channel,
    user: User,
    name: str,
    args: Sequence[str] = (),
    *,
    can_manage_channel: bool = False,
    memory: MemoryAdmin | None = None,
    policies: PolicyAdmin | None = None,
) -> CommandReply:
    name = name.strip().lower()
    if name == "mode":
        return await _mode(policies, channel, user, args, can_manage_channel)
    if name == "status":
        return _status(engine, channel)
    if name == "why":
        return await _why(engine, channel)
    if name == "quiet":
        return await _quiet(engine, channel, args, can_manage_channel)
    if name == "memory":
        if memory is None:
            return CommandReply("I keep no long-term memories about you here.")
        return CommandReply(await memory.describe_user(user.id))
    if name == "forget-me":
        if memory is None:
            return CommandReply("I keep no long-term memories about you here.")
        # Everything of theirs, in the store and in the running bot (kuuki.memory.forgetting).
        count = await memory.forget_user(user.id)
        return CommandReply(
            f"Done: I forgot what I remembered about you ({count} items), and I will not "
            "learn about you again. `/kuuki remember-me` lets me remember you from now on."
        )
    if name == "remember-me":
        if memory is None or not await memory.unforget_user(user.id):
            return CommandReply("You were not forgotten: nothing to change.")
        return CommandReply("OK: from now on I may remember what you tell me here.")
    return CommandReply(
        f"Unknown command {name!r}. Try one of: {', '.join(COMMANDS)}.", ok=False
    )


def _status(engine: EngineCommands, channel: Channel) -> CommandReply:
    st = engine.status(channel)
    lines = [
        f"Listening here: {'yes' if st['listening'] else 'no'}",
        f"Judge mode: {st['judge_mode']}",
        f"LLM calls today: {st['llm_calls_today']} ({st['tokens_today']} tokens)",
    ]
    if st["quiet_until"]:
        lines.append(f"Quiet here until {st['quiet_until']} (unless addressed)")
    return CommandReply("\n".join(lines))


async def _why(engine: EngineCommands, channel: Channel) -> CommandReply:
    row = await engine.latest_decision(channel.id)
    if row is None:
        return CommandReply("I have not decided anything in this channel yet.")
    parts = [f"Last decision: {row['action']} (stage {row['stage']}, score {row['score']})"]
    parts.append(f"Reason: {row['reason']}")
    trace = row.get("trace") or {}
    top = sorted(trace.get("contributions", []), key=lambda c: -abs(c["points"]))[:5]
    parts += [f"{c['points']:+.0f} {c['rule']}" for c in top]
    for summary, *because in model_lines(trace.get("features", {})):
        parts += [summary, *(f"  {line}" for line in because)]
    return CommandReply("\n".join(parts))


async def _quiet(
    engine: EngineCommands, channel: Channel, args: Sequence[str], can_manage: bool
) -> CommandReply:
    if not can_manage:
        return CommandReply(
            "Only members who can manage this channel can make me quiet here.", ok=False
        )
    try:
        minutes = float(args[0]) if args else 30.0
    except ValueError:
        return CommandReply("Usage: /kuuki quiet <minutes> (0 ends it).", ok=False)
    if not 0 <= minutes <= MAX_QUIET_MINUTES:
        return CommandReply(f"Minutes must be from 0 to {MAX_QUIET_MINUTES}.", ok=False)
    await engine.quiet(channel, minutes)
    if minutes == 0:
        return CommandReply("OK, I am listening normally again.", ephemeral=False)
    return CommandReply(
        f"OK, I will stay quiet here for {minutes:g} minutes unless someone addresses me.",
        ephemeral=False,
    )


MODE_USAGE = (
    "Usage: /kuuki mode (shows this channel's policy) | /kuuki mode listen|asked|member | "
    "/kuuki mode key=value … (mode, readiness, keywords, language, proactive, quiet_hours, "
    "timezone, system_prompt) | /kuuki mode reset (back to kuuki.toml)"
)


async def _mode(
    policies: PolicyAdmin | None, channel: Channel, user: User, args: Sequence[str],
    can_manage: bool,
) -> CommandReply:
    """Show the channel's policy to anyone; change it for those who manage the channel."""
    if policies is None:
        return CommandReply("Channel policies are not available here.", ok=False)
    if not args:
        return CommandReply(f"My manners here:\n{policies.of(channel).describe()}")
    if not can_manage:
        return CommandReply(
            "Only members who can manage this channel can change my manners here.", ok=False
        )
    try:
        if [a.lower() for a in args] == ["reset"]:
            policy = await policies.reset(channel, user)
        else:
            policy = await policies.change(channel, mode_values(args), user)
    except ConfigError as exc:
        return CommandReply(f"Not changed: {exc.key.removeprefix('/kuuki mode.')}: "
                            f"{exc.problem}\n{MODE_USAGE}", ok=False)
    return CommandReply(f"OK, my manners here are now:\n{policy.describe()}", ephemeral=False)


def mode_values(args: Sequence[str]) -> dict[str, str]:
    """``asked`` or ``key=value …``; a value runs to the next ``key=`` (a system prompt
    has spaces)."""
    if len(args) == 1 and args[0].lower() in MODES:
        return {"mode": args[0].lower()}
    values: dict[str, str] = {}
    key = ""
    for word in args:
        head, eq, rest = word.partition("=")
        if eq and head.isidentifier():
            key = head.lower()
            values[key] = rest
        elif key:
            values[key] = f"{values[key]} {word}"
        else:
            raise ConfigError("/kuuki mode", f"expected key=value, got {word!r}")
    return values
