"""The few settings the engine reads, as one value (the composition root, kuuki.app.build,
fills it from `Settings`; the engine never sees the settings themselves)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kuuki.engine.intake import Relay

# Redelivered ids answered from memory; older redeliveries ask the store.
SEEN_CAPACITY = 20_000


@dataclass(frozen=True, slots=True)
class EngineConfig:
    # The persona's name: a user with this id is the bot itself (with the platform ids
    # adapters add), and the bot's own reactions are stored under it.
    bot_name: str = "Kuu"
    # Step 1: channels listened to (empty: all) and never listened to (names or ids; a
    # thread follows its parent), and whether direct messages are answered.
    channel_allow: tuple[str, ...] = ()
    channel_deny: tuple[str, ...] = ()
    dms_enabled: bool = True
    # Bounded memory (kuuki.engine.channels).
    max_live_channels: int = 500
    channel_idle_minutes: float = 60.0
    # How old an addressed message missed while away may be and still be answered.
    catch_up_minutes: float = 10.0
    # Shown by `/kuuki status` (the pipeline itself was built with it).
    judge_mode: str = "auto"
    # Shadow mode (step 6): the bot decides, and with a model writes and checks what it
    # would say, but posts nothing, and nothing it would have posted joins the timeline;
    # each decision is stored marked so. Everywhere, or in these channels (names or ids; a
    # thread follows its parent), as a per-channel listening policy will ask.
    shadow: bool = False
    shadow_channels: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """How a scale-out process runs its engine (kuuki.scale); the defaults are one
    process handling everything it takes in."""

    # A gateway's engine relays what it takes in to the worker that owns the channel
    # instead of handling it: the relay is its inbox, nothing is queued here.
    relay: Relay | None = None
    # A worker sees each delivery once from the broker: it keeps no ids in memory (0).
    seen_capacity: int = SEEN_CAPACITY


SINGLE_PROCESS = EngineOptions()  # the default: everything taken in is handled here
