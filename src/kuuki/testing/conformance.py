"""The platform conformance contract: one driver per platform, the same scenarios for all.

A `PlatformDriver` runs a local fake platform server, the real platform client (discord.py,
slack-bolt) pointed at it through its documented seams, and a kuuki engine with a scripted
LLM behind an adapter. The scenarios in `tests/platforms/test_conformance.py` talk only to
this protocol, so the same bot behaviour is asserted on every platform.

Driver contract:

- Users and channels are named (``"alice"``, ``"general"``); the driver maps names to
  platform ids and creates them on first use. Every name other than the bot is a human
  unless ``bot=True`` is passed to `say`.
- The persona's name is ``settings.persona.name``; ``mention_bot=True`` makes the message a
  platform mention of the bot (the engine must see the bot's user id in ``mentions``).
- ``say`` returns the platform id of the posted message — the id the engine stores, so
  ``app.engine.state(channel_id).buffer`` and the store can be checked against it.
- ``thread`` is the platform id of the thread's root message (Slack ``thread_ts``) or of a
  thread channel (Discord); `start_thread` creates one and returns that id.
- ``slash`` answers with the command reply's text (ephemeral or not).
- Waiting never sleeps: `wait_bot_messages`/`wait_bot_reactions` return as soon as the
  server has recorded ``n`` items in total since start, or raise `TimeoutError`.
- `settle` returns when every event delivered so far has been handled by the engine and
  every action sent (the driver must make sure the client has dispatched what the server
  sent before waiting on ``engine.idle()``).
- `drop_connection` closes the realtime connection from the server's side and keeps the
  client away; events said meanwhile are queued and delivered after it reconnects (replay
  on resume, or redelivery); `wait_connected` lets it back in and returns once it is
  connected and has caught up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kuuki.clock import Clock, RealClock
from kuuki.testing.faults import FaultyStore

if TYPE_CHECKING:
    from kuuki.app import App
    from kuuki.ports import Outbox
    from kuuki.settings import Settings
    from kuuki.testing.llm import ScriptedLLM


async def driver_app(
    settings: Settings, store_url: str, outbox: Outbox, llm: ScriptedLLM, *, faulty: bool,
    clock: Clock | None = None,
) -> tuple[App, FaultyStore | None]:
    """The app a driver runs its bot with: real time, ``llm`` for replies and judging, no
    embedder; with ``faulty`` its store is a `FaultyStore` (returned too, to fail on
    command), else one opened at ``store_url``. ``clock``: a test's (a `VirtualClock` for
    the hour of day), else real time."""
    from kuuki.app import FROM_SETTINGS, FromSettings, build_app
    from kuuki.store import Store

    faults = await FaultyStore.open(store_url) if faulty else None
    store: Store | str | FromSettings = (
        faults if faults is not None else store_url if store_url is not None else FROM_SETTINGS
    )
    app = await build_app(settings, clock=clock or RealClock(), outbox=outbox, llm=llm,
                          judge_llm=llm, store=store, embedder=None)
    return app, faults


@dataclass(slots=True)
class SentMessage:
    """A message the bot posted, as the fake server recorded it."""

    id: str
    channel: str  # channel name as the driver knows it ("general"), or a thread's channel
    text: str
    thread: str | None = None  # thread id (Discord thread channel / Slack thread_ts)
    reply_to: str | None = None  # explicit reply reference (Discord message_reference)
    mass_mentions_allowed: bool = False  # could this message ping @everyone/@here/roles?
    raw: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PlatformDriver(Protocol):
    """A fake platform, its real client, and a kuuki engine between them (see module doc)."""

    name: str  # "discord" | "slack"
    text_limit: int  # the platform's maximum message length in characters
    llm: ScriptedLLM  # the engine's LLM (main and judge); tests enqueue answers on it

    @property
    def app(self) -> App:
        """The running App (after start())."""

    async def start(self, settings: Settings) -> None:
        """Start the local server, the engine and the real client; return when the client
        is connected and the bot's user id is known to the engine. The engine is built with
        ``build_app(settings, clock=RealClock(), outbox=..., llm=self.llm,
        judge_llm=self.llm, embedder=None)`` and a temporary SQLite store."""

    async def stop(self) -> None:
        """Stop client, engine and server; close every session (no resource warnings)."""

    def channel_id(self, channel: str = "general") -> str:
        """The kuuki Channel id for a named channel."""

    async def say(
        self,
        user: str,
        text: str,
        *,
        channel: str = "general",
        thread: str | None = None,
        reply_to: str | None = None,
        mention_bot: bool = False,
        bot: bool = False,
    ) -> str:
        """Post a message as `user`; returns its platform message id. `reply_to` is a
        message id (a bot message id makes it a reply to the bot)."""

    async def start_thread(self, user: str, text: str, *, channel: str = "general") -> str:
        """Post a root message and open a thread on it; returns the thread id to pass as
        `thread=` to `say`."""

    async def edit(self, message_id: str, text: str, *, channel: str = "general") -> None: ...

    async def delete(self, message_id: str, *, channel: str = "general") -> None:
        """Delete a message. An id the platform never saw still produces the platform's
        delete event (platforms report deletes of messages a client never received)."""

    async def react(
        self, user: str, message_id: str, emoji: str, *, channel: str = "general"
    ) -> None: ...

    async def slash(
        self,
        user: str,
        command: str,
        args: str = "",
        *,
        channel: str = "general",
        can_manage: bool = False,
    ) -> str:
        """Run `/kuuki <command> <args>` as `user`; returns the reply text."""

    async def send_malformed(self) -> None:
        """Deliver payloads the client cannot map (missing fields, unknown types, a text
        over the platform's own limit where it has one); the adapter must log and skip
        them and keep running. (A text within the platform's limit but longer than the
        engine keeps is no malformed payload: the engine cuts it.)"""

    async def drop_connection(self) -> None:
        """Close the realtime connection from the server side (see module doc)."""

    async def wait_connected(self, timeout: float = 10) -> None: ...

    async def wait_bot_messages(self, n: int, timeout: float = 10) -> list[SentMessage]: ...

    async def wait_bot_reactions(self, n: int, timeout: float = 10) -> list[str]:
        """Emoji of the bot's reactions (unicode or platform name), in order."""

    async def settle(self) -> None: ...

    @property
    def bot_messages(self) -> list[SentMessage]: ...

    @property
    def bot_reactions(self) -> list[str]: ...
