"""`SlackAdapter`: slack-bolt (async) between Slack and the engine, over Socket Mode or,
with a signing secret, the HTTP Events API (`asgi`, served by kuuki.platforms.slack.http).

Start-up order: ``auth.test`` (the bot's user id joins ``engine.bot_user_ids`` before any
channel exists), bind the outbox, backfill history, then open the Socket Mode connection,
so live events queue behind the history they follow.

Delivery: bolt runs with ``process_before_response=True``, so an envelope is acked only
once its event is durable in the store (`Engine.handle` returned): the ack point. An event
lost to a dropped socket or a crash is therefore never acked and comes again; one
delivered twice (both ``message`` and ``app_mention``, or a redelivery) has the same
event id and is handled once. When the store cannot take an event in (an outage), the
listener fails, bolt answers 500 and the envelope stays unacked: Slack delivers it again,
and the channel is also read back from its history once the store answers (so nothing is
lost when Slack's retries run out). Over HTTP the same holds per request: the answer is
200 only once the event is durable, 500 when the store cannot take it (Slack retries,
with ``X-Slack-Retry-Num``), and a retry of an event already taken has its event id and
is handled once (answered 200). A request whose signature does not match the signing
secret is answered 401 by bolt before any listener runs. Anything that cannot be mapped
is logged with its kind, acked and skipped: one bad payload never stops the adapter.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import aiohttp
from slack_bolt.adapter.asgi.async_handler import AsyncSlackRequestHandler
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from kuuki.domain import Channel, ChatEvent, User
from kuuki.errors import ConfigError, IntakeUnavailable, KuukiError
from kuuki.platforms.commands import CommandReply
from kuuki.platforms.network import network_reason
from kuuki.platforms.retry import Retrier
from kuuki.platforms.slack.backfill import HistoryReader
from kuuki.platforms.slack.commands import COMMAND, response_of, run_slash
from kuuki.platforms.slack.mapping import MalformedPayload, Mapper, payload_kind
from kuuki.platforms.slack.names import Directory
from kuuki.platforms.slack.outbox import SlackOutbox
from kuuki.text.secrets import redact

if TYPE_CHECKING:
    from kuuki.app import App

log = logging.getLogger("kuuki.slack")

SLACK_API = "https://slack.com/api/"
_RECENT = 5_000
_HANDLED_TYPES = frozenset({"message", "app_mention", "reaction_added"})



class _StillOwed(IntakeUnavailable):
    """Refused because the channel's lost events are not read back yet (kuuki.platforms.
    retry): not a new loss, so it does not start another read-back round (a busy channel
    would otherwise keep the rounds going); Slack's redelivery brings the event back."""

class SlackAdapter:
    """One workspace connection for one App (see module doc)."""

    def __init__(
        self,
        app: App,
        bot_token: str,
        app_token: str,
        outbox: SlackOutbox | None = None,
        *,
        base_url: str | None = None,
        backfill_limit: int = 50,
        signing_secret: str | None = None,
    ) -> None:
        self.app = app
        if outbox is None:
            if not isinstance(app.engine.outbox, SlackOutbox):
                raise ValueError(
                    "pass the SlackOutbox the App's engine sends through (for instance the "
                    "one inside a RoutingOutbox)"
                )
            outbox = app.engine.outbox
        self.outbox = outbox
        self.bot_token = bot_token
        self.app_token = app_token
        self.base_url = base_url or SLACK_API
        self.backfill_limit = backfill_limit
        self.signing_secret = signing_secret  # set: the HTTP Events API instead of sockets
        self.asgi: AsyncSlackRequestHandler | None = None  # the HTTP endpoint, once started
        self._session: aiohttp.ClientSession | None = None
        self._handler: AsyncSocketModeHandler | None = None
        self._mapper: Mapper | None = None
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._locks: OrderedDict[str, asyncio.Lock] = OrderedDict()
        self._history: HistoryReader | None = None
        self._retrier: Retrier | None = None
        self.skipped = 0

    @property
    def mapper(self) -> Mapper:
        if self._mapper is None:
            raise RuntimeError("the Slack adapter has not started")
        return self._mapper

    async def start(self) -> None:
        """Authenticate, backfill, connect (Socket Mode) or make `asgi` ready (HTTP).
        Raises ConfigError when Slack refuses a token."""
        if self.signing_secret is None and not self.app_token.startswith("xapp-"):
            raise ConfigError(
                "SLACK_APP_TOKEN",
                "Socket Mode needs an app-level token (xapp-…) with the connections:write scope",
            )
        client = await self.start_web()
        assert self._history is not None and self._retrier is not None
        try:
            await self._history.start()
        except IntakeUnavailable as exc:
            log.warning("could not store the history read at start-up (%s); retrying", exc)
            self._retrier.missed(await self._member_ids(),
                                 starts=self._history.start_points)
        # With a signing secret bolt checks every request's v0 signature and timestamp
        # (401 otherwise) and answers url_verification, both before `_guard`.
        bolt = AsyncApp(client=client, process_before_response=True, logger=log,
                        signing_secret=self.signing_secret)
        bolt.use(self._guard)
        bolt.error(self._on_error)
        for kind in sorted(_HANDLED_TYPES):
            bolt.event(kind)(self._on_event)
        bolt.command(COMMAND)(self._on_command)
        if self.signing_secret is not None:
            self.asgi = AsyncSlackRequestHandler(bolt)
            log.info("Slack team %s as %s: HTTP Events API ready",
                     self.mapper.directory.team_id, self.mapper.directory.bot_user_id)
            return
        self._handler = AsyncSocketModeHandler(bolt, self.app_token)
        await self._handler.connect_async()  # type: ignore[no-untyped-call]
        log.info("connected to Slack team %s as %s",
                 self.mapper.directory.team_id, self.mapper.directory.bot_user_id)

    async def start_web(self) -> AsyncWebClient:
        """The Web API part of `start`: authenticate, bind the outbox, ready the history
        reader. A scale-out worker needs only this (it sends and reads back, events reach
        it through the broker). Raises ConfigError when Slack refuses the token."""
        self._session = aiohttp.ClientSession()
        client = AsyncWebClient(token=self.bot_token, base_url=self.base_url, session=self._session)
        try:
            auth = await client.auth_test()
        except (aiohttp.ClientConnectionError, OSError) as exc:
            reason = network_reason(exc)
            raise KuukiError(f"cannot reach Slack ({reason}); check the network") from exc
        except SlackApiError as exc:
            raise ConfigError(
                "SLACK_BOT_TOKEN",
                f"Slack refused the bot token ({redact(str(exc.response.get('error')))}); "
                "expected the "
                "xoxb-… token of an app installed in the workspace",
            ) from exc
        bot_user_id, team_id = str(auth["user_id"]), str(auth["team_id"])
        bot_id = auth.get("bot_id")
        persona = self.app.settings.persona.name
        self.app.engine.bot_user_ids.add(bot_user_id)
        directory = Directory(client, team_id=team_id, bot_user_id=bot_user_id, bot_name=persona)
        self._mapper = Mapper(directory, bot_id=str(bot_id) if bot_id else None)
        self.outbox.bind(client, User(bot_user_id, persona, is_bot=True))
        self._history = HistoryReader(
            client, self._mapper, self.app.engine, self.outbox,
            None if self.app.store is None else self.app.store.history,
            per_channel=self.backfill_limit,
        )
        self._retrier = Retrier(self._history.catch_up, name="slack",
                                start_of=self.app.engine.last_taken,
                                reopen=self.app.engine.reopen)
        # lost events are read back, and so is work the store failed under
        self.app.engine.read_back_on_refusal(self._retrier.left)
        return client

    async def read_back(self, channel: Channel, pending: Sequence[ChatEvent]) -> int:
        """Read one conversation back (a scale-out worker taking it over): needs only
        `start_web`."""
        from kuuki.platforms.slack.backfill import read_back

        if self._history is None or self.app.store is None:
            raise RuntimeError("the Slack adapter's Web API part has not started")
        return await read_back(self._history, self.app.store.history, channel, pending)

    async def _member_ids(self) -> list[str]:
        from kuuki.platforms.slack.rows import member_channels

        try:
            return await member_channels(self.mapper.directory.client, self.mapper)
        except Exception:
            return []

    async def close(self) -> None:
        if self._retrier is not None:
            await self._retrier.close()
        handler, self._handler = self._handler, None
        if handler is not None:
            client = handler.client
            await handler.close_async()  # type: ignore[no-untyped-call]
            tasks = [
                t
                for t in (
                    client.message_processor,
                    client.message_receiver,
                    client.current_session_monitor,
                )
                if t is not None
            ]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self.outbox.unbind()
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- bolt listeners ---------------------------------------------------------------------

    async def _guard(
        self, body: dict[str, Any], ack: AsyncAck, next: Callable[[], Awaitable[BoltResponse]]
    ) -> BoltResponse | None:
        """Before any listener: ack and log what no listener will take, so it is not
        redelivered forever and never reaches a listener half-formed."""
        if "command" in body:
            if body.get("command") == COMMAND:
                return await next()
            return self._skip(await ack(), "slash_commands", f"unknown command {body['command']}")
        event = body.get("event")
        if body.get("type") == "event_callback":
            if not isinstance(event, Mapping) or not isinstance(event.get("type"), str):
                return self._skip(await ack(), "events_api", "no event or event type")
            if event["type"] not in _HANDLED_TYPES:
                return self._skip(await ack(), payload_kind(event), "unknown event type")
            return await next()
        return self._skip(await ack(), str(body.get("type") or "?"), "unsupported payload")

    def _skip(self, resp: BoltResponse, kind: str, reason: str) -> BoltResponse:
        self.skipped += 1
        log.warning("skipped slack %s payload: %s", kind, reason)
        return resp

    async def _on_event(self, event: dict[str, Any]) -> None:
        try:
            await self.deliver(event)
        except _StillOwed:
            raise  # not acknowledged; Slack delivers it again once the channel is read back
        except IntakeUnavailable:
            # Not durable, so not acknowledged: bolt answers 500 and Slack redelivers; the
            # channel is also read back once the store answers again (`deliver` told the
            # retrier).
            raise
        except MalformedPayload as exc:
            self._skip(BoltResponse(status=200), exc.kind, exc.reason)
        except Exception:  # one bad event must never stop the adapter
            self.skipped += 1
            log.exception("slack %s event failed", payload_kind(event))

    async def _on_error(self, error: Exception) -> None:
        """bolt's error handler: one line, not bolt's traceback (the envelope stays unacked)."""
        if isinstance(error, IntakeUnavailable):
            log.warning("not acknowledged, Slack will deliver it again: %s", error)
        else:
            log.error("slack listener failed: %s: %s", type(error).__name__, error)

    async def deliver(self, event: Mapping[str, Any]) -> bool:
        """Map one Events API event and queue it; False when nothing was queued.

        Envelopes are dispatched concurrently; a per-channel lock keeps one channel's events
        in arrival order while a first-time name lookup is in flight. The event takes its
        place in line under the lock and is awaited outside it, so a burst in one channel
        shares the store's group commits. Raises `IntakeUnavailable` when the event could
        not be made durable: it must not be acknowledged.
        """
        key = _posted_key(event)
        async with self._lock(_channel_of(event)):
            if key is not None and key in self._recent:
                return False  # the same message as `message` and as `app_mention`
            mapped = await self.mapper.event(event)
            if mapped is None:
                return False
            if self._retrier is not None and self._retrier.owes(mapped.channel.id):
                # lost events here are not read back yet: this one waits with them
                self._refused(mapped, owed=True)
                raise _StillOwed(
                    f"channel {mapped.channel.id} is still to be read back after an outage"
                )
            result = self.app.engine.submit(mapped)
        try:
            queued = await result
        except IntakeUnavailable:
            self._refused(mapped)
            raise
        if key is not None:
            self._recent[key] = None
            if len(self._recent) > _RECENT:
                self._recent.popitem(last=False)
        return queued

    def _refused(self, event: ChatEvent, *, owed: bool = False) -> None:
        """The store did not take ``event`` in: the retrier reads its channel back (from
        the event's message at the latest), and the reader the thread it was said in."""
        if self._retrier is None or self._history is None:
            return
        self._retrier.refused(event, owed=owed)
        if event.message is not None and event.message.thread is not None:
            self._history.owe_thread(event.channel.id, event.message.thread)

    def _lock(self, channel: str) -> asyncio.Lock:
        lock = self._locks.get(channel)
        if lock is None:
            lock = self._locks[channel] = asyncio.Lock()
            if len(self._locks) > _RECENT:  # bounded: drop the oldest lock nobody holds
                for key, old in list(self._locks.items())[: len(self._locks) - _RECENT]:
                    if not old.locked():
                        del self._locks[key]
        self._locks.move_to_end(channel)
        return lock

    async def _on_command(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        try:
            reply = await run_slash(
                self.app.engine, self.mapper.directory, body, memory=self.app.memory,
                policies=self.app.policies,
            )
        except MalformedPayload as exc:
            self._skip(BoltResponse(status=200), exc.kind, exc.reason)
            reply = CommandReply("Sorry, that command arrived incomplete.", ok=False)
        except Exception:
            log.exception("/kuuki %s failed", body.get("text"))
            reply = CommandReply("Sorry, that did not work. Please try again.", ok=False)
        try:
            await respond(**response_of(reply))
        except Exception as exc:
            log.warning("could not answer /kuuki %s: %s", body.get("text"), exc)


def _channel_of(event: Mapping[str, Any]) -> str:
    channel = event.get("channel")
    if not isinstance(channel, str):
        item = event.get("item")
        channel = item.get("channel") if isinstance(item, Mapping) else None
    return channel if isinstance(channel, str) else ""


def _posted_key(event: Mapping[str, Any]) -> str | None:
    if event.get("type") in ("message", "app_mention") and event.get("subtype") is None:
        channel, ts = event.get("channel"), event.get("ts")
        if isinstance(channel, str) and isinstance(ts, str):
            return f"slack:{channel}:{ts}"
    return None
