"""The `/kuuki` commands, platform-neutral: adapters parse the platform's slash command,
call `run_command`, and show the reply (ephemeral where the platform allows)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kuuki.domain import Channel, User
from kuuki.explain.models import model_lines
from kuuki.ports import EngineCommands

COMMANDS = ("status", "why", "quiet", "memory", "forget-me", "remember-me")
MAX_QUIET_MINUTES = 7 * 24 * 60


class MemoryAdmin(Protocol):
    """What a user may ask of the memory layer about themselves."""

    async def describe_user(self, user_id: str) -> str: ...

    async def forget_user(self, user_id: str) -> int: ...

    async def unforget_user(self, user_id: str) -> bool: ...


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
) -> CommandReply:
    name = name.strip().lower()
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
