"""`SlackDriver`: the conformance `PlatformDriver` for Slack.

A `SlackServer` on 127.0.0.1, the real slack-bolt Socket Mode client started by
`kuuki.platforms.slack.run_slack` against it, and a kuuki App (scripted LLM, temporary
SQLite store) behind. Names map to Slack ids on first use; message ids are kuuki's,
``<channel>:<ts>`` (the driver speaks ``ts`` to the server).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kuuki.app import App
from kuuki.clock import Clock
from kuuki.platforms.slack import SlackOutbox, run_slack
from kuuki.platforms.slack.emoji import from_slack_name, to_slack_name
from kuuki.platforms.slack.mapping import message_id, ts_of
from kuuki.platforms.slack.names import unescape
from kuuki.platforms.slack.outbox import PART_LIMIT
from kuuki.testing.conformance import SentMessage, driver_app
from kuuki.testing.faults import FaultyStore
from kuuki.testing.llm import ScriptedLLM
from kuuki.testing.slack_server import SlackServer, mass_mention_possible

if TYPE_CHECKING:
    from kuuki.settings import Settings

BOT_TOKEN = "xoxb-kuuki-test"
APP_TOKEN = "xapp-kuuki-test"


class SlackDriver:
    name = "slack"
    text_limit = PART_LIMIT  # what kuuki keeps a Slack message to (Slack itself takes 40,000)

    def __init__(
        self, *, backfill_limit: int = 50, faulty_store: bool = False,
        clock: Clock | None = None,
    ) -> None:
        self.backfill_limit = backfill_limit
        self.clock = clock  # the bot's (None: real time)
        # With ``faulty_store`` the bot's store is a `FaultyStore` (`faults`), opened anew at
        # each start: a test stops the database and starts it again.
        self.faulty_store = faulty_store
        self.faults: FaultyStore | None = None
        self.server = SlackServer()
        self.llm = ScriptedLLM()
        self.outbox = SlackOutbox()
        self._app: App | None = None
        self._task: asyncio.Task[None] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._users: dict[str, str] = {}
        self._channels: dict[str, str] = {}
        self._reconnect_base = 0
        self._settings: Settings | None = None
        self._store_url = ""

    @property
    def app(self) -> App:
        if self._app is None:
            raise RuntimeError("SlackDriver.start() has not run")
        return self._app

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self, settings: Settings) -> None:
        self.server = SlackServer(bot_name=settings.persona.name)
        await self.server.start()
        self._tmp = tempfile.TemporaryDirectory(prefix="kuuki-slack-")
        self._settings = settings
        self._store_url = settings.store_url or f"sqlite:///{self._tmp.name}/kuuki.sqlite3"
        self.channel_id("general")
        await self._start_bot()

    async def restart(self, while_down: Callable[[], Any] | None = None) -> None:
        """Stop the bot (adapter and app; the server and the store stay), run
        ``while_down``, start it again on the same store and wait until it is connected."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.app.close()
        await self.server.wait_for(lambda: not self.server.connected)
        if while_down is not None:
            result = while_down()
            if asyncio.iscoroutine(result):
                await result
        await self._start_bot()

    async def _start_bot(self) -> None:
        assert self._settings is not None
        self.outbox = SlackOutbox()
        self._app, self.faults = await driver_app(
            self._settings, self._store_url, self.outbox, self.llm, faulty=self.faulty_store,
            clock=self.clock,
        )
        opened = self.server.connections_opened
        self._task = asyncio.create_task(
            run_slack(
                self._app,
                BOT_TOKEN,
                APP_TOKEN,
                self.outbox,
                base_url=self.server.api_url,
                backfill_limit=self.backfill_limit,
            ),
            name="kuuki-slack",
        )
        task = self._task
        await self.server.wait_for(
            lambda: (self.server.connected and self.server.connections_opened > opened)
            or task.done(),
            15,
        )
        if task.done():
            task.result()  # raises what made start-up fail
            raise RuntimeError("the Slack adapter stopped during start-up")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._app is not None:
            await self._app.close()
        await self.server.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    # -- names ----------------------------------------------------------------------------------

    def user_id(self, name: str, *, bot: bool = False) -> str:
        if name not in self._users:
            self._users[name] = self.server.add_user(name, is_bot=bot)
        return self._users[name]

    def channel_id(self, channel: str = "general") -> str:
        if channel not in self._channels:
            if channel.startswith("dm:"):
                peer = self.user_id(channel[3:])
                self._channels[channel] = self.server.add_channel(channel, im_user=peer)
            else:
                private = channel.startswith("private")
                self._channels[channel] = self.server.add_channel(channel, private=private)
        return self._channels[channel]

    def _channel_name(self, cid: str) -> str:
        return next((n for n, i in self._channels.items() if i == cid), cid)

    # -- what people do ---------------------------------------------------------------------

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
        uid = self.user_id(user, bot=bot)
        cid = self.channel_id(channel)
        thread_ts = ts_of(thread) if thread is not None else None
        if reply_to is not None and thread_ts is None:
            root = self.server.find_message(cid, ts_of(reply_to)) or {}
            thread_ts = str(root.get("thread_ts") or ts_of(reply_to))
        if mention_bot:
            text = f"<@{self.server.bot_user_id}> {text}"
        bot_id = self.server.ws.users[uid].get("bot_id") if bot else None
        msg = self.server.user_message(uid, cid, text, thread_ts=thread_ts, bot_id=bot_id)
        await self.server.emit(self.server.message_event(cid, msg))
        if mention_bot:  # Slack sends a mention twice: as `message` and as `app_mention`
            await self.server.emit(self.server.message_event(cid, msg, kind="app_mention"))
        return message_id(cid, str(msg["ts"]))

    async def start_thread(self, user: str, text: str, *, channel: str = "general") -> str:
        return await self.say(user, text, channel=channel)

    async def edit(self, message_id: str, text: str, *, channel: str = "general") -> None:
        cid = self.channel_id(channel)
        msg = self._message(cid, ts_of(message_id))
        before = dict(msg)
        msg["text"] = text
        msg["edited"] = {"user": msg.get("user"), "ts": self.server.next_ts()}
        await self.server.emit(self.server.changed_event(cid, before, msg))

    async def share(
        self, user: str, message_id: str, comment: str = "", *, channel: str = "general"
    ) -> str:
        """``user`` shares (or forwards) the message ``message_id`` into ``channel``, with
        ``comment`` as the text or none: Slack's shape, the words in an attachment."""
        source = message_id.rpartition(":")[0]
        att = self.server.shared(source, self._message(source, ts_of(message_id)))
        return await self._post(self.user_id(user), channel, comment, attachments=[att])

    async def app_post(
        self, app: str, attachments: list[dict[str, Any]], *, channel: str = "general"
    ) -> str:
        """The app ``app`` (its bot user) posts its content as ``attachments``, with an
        empty text, as GitHub's and CI's notifications come."""
        uid = self.user_id(app, bot=True)
        bot_id = self.server.ws.users[uid]["bot_id"]
        return await self._post(uid, channel, "", attachments=attachments, bot_id=bot_id,
                                bot_profile={"id": bot_id, "name": app})

    async def share_file(
        self, user: str, name: str, text: str = "", *, channel: str = "general"
    ) -> str:
        """``user`` uploads the file ``name`` (a ``file_share``, with ``text`` or none)."""
        file_id = "F" + self.server.next_ts().replace(".", "")
        files = [{"id": file_id, "name": name, "title": name}]
        return await self._post(self.user_id(user), channel, text, subtype="file_share",
                                files=files, upload=True)

    async def _post(self, uid: str, channel: str, text: str, **fields: Any) -> str:
        cid = self.channel_id(channel)
        msg = self.server.user_message(uid, cid, text, bot_id=fields.pop("bot_id", None))
        msg.update(fields)
        await self.server.emit(self.server.message_event(cid, msg))
        return message_id(cid, str(msg["ts"]))

    async def delete(self, message_id: str, *, channel: str = "general") -> None:
        """Slack's delete: a thread root with replies leaves its tombstone (``message_changed``),
        anything else goes (``message_deleted``)."""
        cid = self.channel_id(channel)
        msg = self.server.find_message(cid, ts_of(message_id))
        if msg is not None and msg.get("reply_count"):
            await self.server.emit(self.server.tombstone(cid, msg))
            return
        if msg is not None:
            self.server.ws.messages[cid].remove(msg)
        # Slack reports deletions of messages a client never saw, too.
        before = msg or {"type": "message", "ts": ts_of(message_id), "text": ""}
        await self.server.emit(self.server.deleted_event(cid, before))

    async def react(
        self, user: str, message_id: str, emoji: str, *, channel: str = "general"
    ) -> None:
        cid = self.channel_id(channel)
        uid = self.user_id(user)
        self._message(cid, ts_of(message_id))
        await self.server.emit(
            self.server.reaction_event(uid, cid, ts_of(message_id), to_slack_name(emoji))
        )

    def _message(self, cid: str, ts: str) -> dict[str, Any]:
        msg = self.server.find_message(cid, ts)
        if msg is None:
            raise KeyError(f"no message {ts} in {self._channel_name(cid)}")
        return msg

    async def slash(
        self,
        user: str,
        command: str,
        args: str = "",
        *,
        channel: str = "general",
        can_manage: bool = False,
    ) -> str:
        uid = self.user_id(user)
        self.server.ws.users[uid]["is_admin"] = can_manage
        cid = self.channel_id(channel)
        env = self.server.slash_envelope(uid, cid, f"{command} {args}".strip(), "/kuuki")
        await self.server.deliver(env)

        def answered() -> dict[str, Any] | None:
            for r in self.server.responses:
                if r["envelope_id"] == env.id:
                    return r
            ack = env.ack or {}
            payload = ack.get("payload")
            return payload if isinstance(payload, dict) and payload.get("text") else None

        await self.server.wait_for(lambda: answered() is not None, 10)
        found = answered()
        assert found is not None
        return unescape(str(found.get("text") or ""))

    async def send_malformed(self) -> None:
        cid = self.channel_id("general")
        uid = self.user_id("mallory")
        bad = [
            {"type": "message", "user": uid, "text": "no channel, no ts"},
            {"type": "message", "channel": cid, "user": uid, "text": "bad ts", "ts": "yesterday"},
            {"type": "message", "channel": cid, "text": "nobody", "ts": self.server.next_ts()},
            {"type": "kuuki_unknown_event", "channel": cid, "event_ts": self.server.next_ts()},
            {"type": "reaction_added", "user": uid, "reaction": "eyes", "item": "not a dict"},
            {
                "type": "message",
                "channel": cid,
                "user": uid,
                "text": "x" * 200_000,
                "ts": self.server.next_ts(),
            },
        ]
        envelopes = [await self.server.emit(event) for event in bad]
        no_event = self.server.event_envelope({})
        no_event.payload.pop("event")
        await self.server.deliver(no_event)
        await self.server.deliver_raw("this is not JSON")
        ids = {e.id for e in [*envelopes, no_event]}
        await self.server.wait_for(lambda: not ids & {e.id for e in self.server.pending}, 10)

    # -- the connection -----------------------------------------------------------------------

    async def drop_connection(self) -> None:
        self._reconnect_base = self.server.connections_opened
        self.server.hold_connections()
        await self.server.drop()

    async def wait_connected(self, timeout: float = 10) -> None:
        self.server.release_connections()
        base = self._reconnect_base
        await self.server.wait_for(
            lambda: self.server.connections_opened > base and self.server.connected, timeout
        )

    # -- what the bot did ---------------------------------------------------------------------

    @property
    def bot_messages(self) -> list[SentMessage]:
        out = []
        for cid, msgs in self.server.ws.messages.items():
            for m in msgs:
                if m.get("bot_id") != self.server.bot_id:
                    continue
                raw_text = str(m.get("text") or "")
                thread = m.get("thread_ts")
                out.append(
                    SentMessage(
                        id=message_id(cid, str(m["ts"])),
                        channel=self._channel_name(cid),
                        text=unescape(raw_text),
                        thread=message_id(cid, thread) if thread else None,
                        mass_mentions_allowed=mass_mention_possible(
                            raw_text, link_names=m.get("link_names")
                        ),
                        raw=m,
                    )
                )
        return sorted(out, key=lambda s: float(ts_of(s.id)))

    @property
    def bot_reactions(self) -> list[str]:
        return [from_slack_name(r["name"]) for r in self.server.bot_reactions]

    async def wait_bot_messages(self, n: int, timeout: float = 10) -> list[SentMessage]:
        await self.server.wait_for(lambda: len(self.bot_messages) >= n, timeout)
        return self.bot_messages

    async def wait_bot_reactions(self, n: int, timeout: float = 10) -> list[str]:
        await self.server.wait_for(lambda: len(self.server.bot_reactions) >= n, timeout)
        return self.bot_reactions

    async def settle(self, timeout: float = 10) -> None:
        """Acked means handled: the adapter acks an envelope only once the engine has it."""
        self.server.release_connections()
        async with asyncio.timeout(timeout):
            while True:
                await self.server.wait_acked(timeout)
                await self.app.engine.idle()
                if not self.server.pending:  # the bot's own posts came back as events
                    return
