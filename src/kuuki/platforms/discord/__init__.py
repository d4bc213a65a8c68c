"""Discord adapter: discord.py events → ChatEvents, the engine's actions → Discord.

    outbox = DiscordOutbox()
    app = await build_app(settings, clock=RealClock(), outbox=outbox)
    await run_discord(app, settings.discord_token)   # until cancelled

The adapter translates and holds no decisions (see `client`, `mapping`, `outbox`,
`commands`). Needs the privileged MESSAGE CONTENT intent (see the README).
"""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Any

with warnings.catch_warnings():
    # discord.py imports the stdlib audioop for voice; deprecated since 3.11 (audioop-lts
    # replaces it on 3.13). kuuki has no voice; keep the warning out of users' logs.
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord

from kuuki.errors import ConfigError
from kuuki.platforms.discord.client import KuukiClient, intents
from kuuki.platforms.discord.outbox import DiscordOutbox
from kuuki.platforms.discord.problems import start_problems

if TYPE_CHECKING:
    from kuuki.app import App

__all__ = ["DiscordOutbox", "KuukiClient", "intents", "run_discord"]

log = logging.getLogger("kuuki.discord")

# kuuki has no voice: discord.py's "PyNaCl/davey is not installed, voice will NOT be
# supported" warnings speak to nobody here, so they are switched off where they are kept.
discord.VoiceClient.warn_nacl = False
discord.VoiceClient.warn_dave = False


async def run_discord(
    app: App, token: str, outbox: DiscordOutbox | None = None, **client_options: Any
) -> None:
    """Run the Discord client for `app` until cancelled.

    `app` must have been built with a `DiscordOutbox`; the outbox is bound to the client
    when the client has logged in. The client is closed on the way out, never `app`.
    A rejected token or a refused MESSAGE CONTENT intent raise `KuukiError` saying what
    to change; lost connections are resumed by discord.py.
    """
    found = outbox or app.engine.outbox
    if not isinstance(found, DiscordOutbox):
        raise TypeError("run_discord needs a DiscordOutbox (the app's, or routed to by it)")
    outbox = found
    if not token:
        raise ConfigError("DISCORD_TOKEN", "a Discord bot token is needed to connect")
    history = None if app.store is None else app.store.history
    client = KuukiClient(app.engine, outbox, store=history, memory=app.memory,
                         policies=app.policies, **client_options)
    with start_problems():
        async with client:
            await client.start(token)
