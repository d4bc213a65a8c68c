"""`DiscordDriver`, the conformance driver: this server, discord.py, and an engine behind
`run_discord` (see kuuki.testing.conformance)."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable
from typing import Any

from kuuki.app import App
from kuuki.clock import Clock
from kuuki.platforms.discord import DiscordOutbox, KuukiClient, run_discord
from kuuki.settings import Settings
from kuuki.testing.conformance import SentMessage, driver_app
from kuuki.testing.discord_server import shapes
from kuuki.testing.discord_server.server import DiscordServer
from kuuki.testing.discord_server.state import MANAGE_CHANNELS, MEMBER_PERMISSIONS, Payload
from kuuki.testing.faults import FaultyStore
from kuuki.testing.llm import ScriptedLLM


class DiscordDriver:
    """`PlatformDriver` for Discord: this server, discord.py, and an engine behind
    `run_discord`. ``discord.http.Route.BASE`` is process-wide: one driver at a time."""

    name = "discord"
    text_limit = 2000

    def __init__(
        self, server: DiscordServer | None = None, *, faulty_store: bool = False,
        clock: Clock | None = None,
    ) -> None:
        self._given = server
        self.clock = clock  # the bot's (None: real time)
        # With ``faulty_store`` the bot's store is a `FaultyStore` (`faults`), opened anew at
        # each start: a test stops the database and starts it again.
        self.faulty_store = faulty_store
        self.faults: FaultyStore | None = None
        self.server = server or DiscordServer()
        self.llm = ScriptedLLM()
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._task: asyncio.Task[None] | None = None
        self._old_base: str | None = None
        self._app: App | None = None
        self._outbox: DiscordOutbox | None = None
        self._settings: Settings | None = None
        self._store_url = ""

    @property
    def app(self) -> App:
        assert self._app is not None, "start() first"
        return self._app

    @property
    def store_url(self) -> str:
        """The bot's store, for a test that opens it as another process would."""
        return self._store_url

    @property
    def client(self) -> KuukiClient:
        assert self._outbox is not None
        client = self._outbox.client
        assert isinstance(client, KuukiClient), "start() first"
        return client

    async def start(self, settings: Settings) -> None:
        from discord.http import Route  # after kuuki.platforms.discord has imported discord

        self.server = self._given or DiscordServer(bot_name=settings.persona.name)
        await self.server.start()
        self.server.text_channel("general")
        self._old_base, Route.BASE = Route.BASE, self.server.api_base
        store_url = settings.store_url
        if not store_url:
            self._tmp = tempfile.TemporaryDirectory(prefix="kuuki-discord-")
            store_url = f"sqlite:///{self._tmp.name}/kuuki.sqlite3"
        self._settings, self._store_url = settings, store_url
        await self._start_bot()

    async def _start_bot(self) -> None:
        assert self._settings is not None
        self._outbox = DiscordOutbox()
        self._app, self.faults = await driver_app(
            self._settings, self._store_url, self._outbox, self.llm, faulty=self.faulty_store,
            clock=self.clock,
        )
        before = self.server.identifies
        # guild_ready_timeout: discord.py waits that long for more guilds before on_ready
        self._task = asyncio.create_task(
            run_discord(self._app, self.server.token, guild_ready_timeout=0.05)
        )
        server = self.server
        await self._until(lambda: server.identifies > before and server.connected)
        caught_up = asyncio.ensure_future(self.client.caught_up.wait())
        await asyncio.wait({caught_up, self._task}, timeout=10,
                           return_when=asyncio.FIRST_COMPLETED)
        if not caught_up.done():
            caught_up.cancel()
            if self._task.done():
                self._task.result()
            raise TimeoutError("the Discord client did not catch up after connecting")
        await self.settle()

    async def restart(self, while_down: Callable[[], Any] | None = None) -> None:
        """Stop the bot (client and app; server and store stay), run ``while_down`` (what
        people say meanwhile is not delivered: a new session starts afresh), start it
        again on the same store, and wait until it has caught up."""
        assert self._task is not None and self._app is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self._app.close()
        await self.server.wait_for(lambda: not self.server.connected)
        if while_down is not None:
            result = while_down()
            if asyncio.iscoroutine(result):
                await result
        await self._start_bot()

    async def _until(self, predicate: Callable[[], bool], timeout: float = 10) -> None:
        """Wait on the server, failing at once if the client task dies."""
        assert self._task is not None
        waiter = asyncio.ensure_future(self.server.wait_for(predicate, timeout))
        await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if not waiter.done():
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiter
            self._task.result()  # raises what ended the client
            raise RuntimeError("the Discord client stopped")
        waiter.result()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._app is not None:
            await self._app.close()
        await self.server.close()
        if self._old_base is not None:
            from discord.http import Route

            Route.BASE = self._old_base
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def channel_id(self, channel: str = "general") -> str:
        return str(self.server.text_channel(channel)["id"])

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
        ping: bool = False,
    ) -> str:
        if mention_bot:
            text = f"<@{self.server.bot_user['id']}> {text}"
        msg = await self.server.post(
            user, thread or self.channel_id(channel), text, reply_to=reply_to, bot=bot,
            ping=ping,
        )
        return str(msg["id"])

    async def start_thread(self, user: str, text: str, *, channel: str = "general") -> str:
        root = await self.say(user, text, channel=channel)
        await self.server.create_thread(self.channel_id(channel), root, text[:40])
        return root

    async def edit(self, message_id: str, text: str, *, channel: str = "general") -> None:
        await self.server.edit(message_id, text)

    # -- what else Discord sends (kuuki.testing.discord_server.shapes) -------------------------

    async def forward(
        self, user: str, message_id: str, *, channel: str = "general", dm: bool = False
    ) -> str:
        """`user` forwards message `message_id` into `channel`, or to the bot (`dm`)."""
        to = self.server.dm_channel(user)["id"] if dm else self.channel_id(channel)
        base = self.server.message_payload(to, self.server.user(user), "")
        msg = shapes.forward(base, self.server.messages[message_id])
        return str((await self.server.deliver(msg))["id"])

    async def crosspost(self, text: str, *, from_channel: str = "announcements",
                        channel: str = "general") -> str:
        """An announcement of another guild's `from_channel`, which `channel` follows."""
        guild, source = self.server.snowflake(), self.server.snowflake()
        text = text.replace("#" + from_channel, f"<#{source}>")
        base = self.server.message_payload(
            self.channel_id(channel), self.server.user(f"Other Guild #{from_channel}"), text)
        msg = shapes.crosspost(base, source_guild=guild, source_channel=source,
                               source_message=self.server.snowflake(), channel_name=from_channel)
        return str((await self.server.deliver(msg))["id"])

    async def send_files(self, user: str, names: list[str], text: str = "", *,
                         channel: str = "general", voice_s: float | None = None) -> str:
        """`user` uploads files (`voice_s`: a voice message of that length instead)."""
        base = self.server.message_payload(self.channel_id(channel), self.server.user(user), text)
        if voice_s is not None:
            files = [shapes.attachment(self.server.snowflake(), "voice-message.ogg",
                                       content_type="audio/ogg", duration_secs=voice_s)]
        else:
            files = [shapes.attachment(self.server.snowflake(), n) for n in names]
        msg = shapes.with_files(base, files, voice=voice_s is not None)
        return str((await self.server.deliver(msg))["id"])

    async def delete(self, message_id: str, *, channel: str = "general") -> None:
        msg = self.server.messages.get(message_id)
        await self.server.delete(message_id, msg["channel_id"] if msg else self.channel_id(channel))

    async def react(
        self, user: str, message_id: str, emoji: str, *, channel: str = "general"
    ) -> None:
        msg = self.server.messages.get(message_id)
        cid = msg["channel_id"] if msg else self.channel_id(channel)
        await self.server.react(self.server.user(user), message_id, cid, emoji)

    async def slash(
        self,
        user: str,
        command: str,
        args: str = "",
        *,
        channel: str = "general",
        can_manage: bool = False,
    ) -> str:
        group = next(c for c in self.server.commands if c["name"] == "kuuki")
        sub = next(o for o in group["options"] if o["name"] == command)
        values = args.split()
        if [o["type"] for o in sub.get("options", [])] == [3]:  # one text: the whole line
            values = [args] if args else []
        typed = {3: str, 4: int, 10: float}
        options = [
            {"name": o["name"], "type": o["type"], "value": typed.get(o["type"], str)(v)}
            for o, v in zip(sub.get("options", []), values, strict=False)
        ]
        permissions = MEMBER_PERMISSIONS | (MANAGE_CHANNELS if can_manage else 0)
        iid = await self.server.interact(
            user,
            self.channel_id(channel),
            "kuuki",
            [{"name": command, "type": 1, "options": options}],
            permissions=permissions,
        )
        await self._until(lambda: iid in self.server.interaction_responses)
        data = self.server.interaction_responses[iid].get("data") or {}
        return str(data.get("content", ""))

    async def send_malformed(self) -> None:
        general = self.channel_id()
        for frame in (
            {"op": 0, "t": "MESSAGE_CREATE", "d": {"id": self.server.snowflake()}},
            {"op": 0, "t": "MESSAGE_CREATE", "d": {"channel_id": general, "author": None}},
            {"op": 0, "t": "MESSAGE_UPDATE", "d": {"channel_id": general}},
            {"op": 0, "t": "MESSAGE_REACTION_ADD", "d": {"channel_id": "x", "emoji": 5}},
            {"op": 0, "t": "MESSAGE_DELETE", "d": {}},
            {"op": 0, "t": "SOMETHING_NEW_FROM_DISCORD", "d": {"x": 1}},
            {"op": 42, "s": None, "t": None, "d": None},
        ):
            await self.server.send_raw(frame)
        await self.server.post("mallory", general, "x" * 100_000)

    async def drop_connection(self) -> None:
        await self.server.drop_connection(hold=True)

    async def wait_connected(self, timeout: float = 10) -> None:
        self.server.reopen()
        await self._until(lambda: self.server.connected, timeout)
        await self.settle()

    async def wait_bot_messages(self, n: int, timeout: float = 10) -> list[SentMessage]:
        await self._until(lambda: len(self.server.bot_messages) >= n, timeout)
        return self.bot_messages

    async def wait_bot_reactions(self, n: int, timeout: float = 10) -> list[str]:
        await self._until(lambda: len(self.server.bot_reactions) >= n, timeout)
        return self.bot_reactions

    async def settle(self) -> None:
        for _ in range(100):
            before = self.server.session.seq if self.server.session else 0
            await self.server.sync()
            await self.client.idle()
            await self.app.engine.idle()
            if (self.server.session.seq if self.server.session else 0) == before:
                return
        raise TimeoutError("the bot kept producing events")

    @property
    def bot_messages(self) -> list[SentMessage]:
        return [self._sent(m) for m in self.server.bot_messages]

    @property
    def bot_reactions(self) -> list[str]:
        return [emoji for _, _, emoji in self.server.bot_reactions]

    def _sent(self, m: Payload) -> SentMessage:
        ch = self.server.channels.get(m["channel_id"], {})
        in_thread = ch.get("type") in (11, 12)
        parent = self.server.channels.get(ch.get("parent_id") or "", {})
        allowed = m.get("allowed_mentions")
        parse = (allowed or {}).get("parse", [])
        mass = allowed is None or "everyone" in parse or "roles" in parse
        return SentMessage(
            id=m["id"],
            channel=str((parent if in_thread else ch).get("name", m["channel_id"])),
            text=m["content"],
            thread=m["channel_id"] if in_thread else None,
            reply_to=(m.get("message_reference") or {}).get("message_id"),
            mass_mentions_allowed=mass or bool((allowed or {}).get("roles")),
            raw=m,
        )
