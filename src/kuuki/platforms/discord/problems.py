"""What Discord's start-up failures mean for the person running the bot: one place for
`run_discord` (gateway) and `DiscordRest` (a scale-out worker's REST-only login)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import aiohttp
import discord

from kuuki.errors import KuukiError
from kuuki.platforms.network import network_reason


@contextlib.contextmanager
def start_problems() -> Iterator[None]:
    """Turn a rejected token, an unreachable Discord or a refused MESSAGE CONTENT intent
    into a `KuukiError` that says what to change."""
    try:
        yield
    except discord.LoginFailure as exc:
        raise KuukiError(
            "Discord rejected the bot token (DISCORD_TOKEN): copy it again from the "
            "Developer Portal, Bot → Reset Token"
        ) from exc
    except (aiohttp.ClientConnectionError, OSError) as exc:
        reason = network_reason(exc)
        raise KuukiError(f"cannot reach Discord ({reason}); check the network") from exc
    except discord.PrivilegedIntentsRequired as exc:
        raise KuukiError(
            "Discord refused the MESSAGE CONTENT intent: turn it on in the Developer Portal, "
            "your application → Bot → Privileged Gateway Intents → MESSAGE CONTENT INTENT"
        ) from exc
