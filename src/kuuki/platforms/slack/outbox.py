"""`SlackOutbox`: the engine's actions, performed through the Slack Web API.

It exists before the Slack client does (the engine needs an outbox when it is built) and is
bound once the adapter has authenticated. Invariants of what leaves the bot:

- replies go into the thread of the message they answer when that message is in a thread;
- no text can ping a crowd: ``defuse_mentions`` first, then Slack's ``& < >`` escaping so no
  ``<!channel>``/``<!here>``/``<!everyone>`` control sequence survives, and ``link_names``
  off so a bare ``@channel`` stays words;
- long texts are split on natural boundaries into parts of at most `PART_LIMIT` characters;
- actions about backfilled messages (history read at start-up) are suppressed: the engine
  has no notion of "past" events yet, and the bot must not answer yesterday's mention.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from kuuki.domain import Action, ActionKind, Channel, Message, User
from kuuki.platforms.slack.emoji import to_slack_name
from kuuki.platforms.slack.mapping import message_id, reply_metadata, ts_of
from kuuki.platforms.slack.names import escape
from kuuki.text.safety import defuse_mentions, split_text

log = logging.getLogger("kuuki.slack")

PART_LIMIT = 3_000  # Slack accepts 40,000; a chat message longer than this is hard to read
_SUPPRESS_CAPACITY = 20_000


class SlackOutbox:
    """The Outbox for Slack (see module doc). `bind` it to a client before use."""

    def __init__(self) -> None:
        self._client: AsyncWebClient | None = None
        self._bot: User | None = None
        self._suppressed: OrderedDict[str, None] = OrderedDict()
        self.suppressed_actions = 0

    def bind(self, client: AsyncWebClient, bot: User) -> None:
        self._client = client
        self._bot = bot

    def unbind(self) -> None:
        self._client = None

    def suppress(self, message_ids: Iterable[str]) -> None:
        """Never act on these messages (kuuki ids, ``<channel>:<ts>``): backfilled history."""
        for key in message_ids:
            self._suppressed[key] = None
            if len(self._suppressed) > _SUPPRESS_CAPACITY:
                self._suppressed.popitem(last=False)

    def is_suppressed(self, channel_id: str, message_id: str | None) -> bool:
        return message_id is not None and message_id in self._suppressed

    async def send(self, channel: Channel, action: Action) -> Message | None:
        if action.kind is ActionKind.NONE:
            return None
        if self.is_suppressed(channel.id, action.target_message_id):
            self.suppressed_actions += 1
            log.info(
                "suppressed %s about backfilled message %s in %s",
                action.kind.value,
                action.target_message_id,
                channel.id,
            )
            return None
        client, bot = self._bound()
        if action.kind is ActionKind.REACT:
            await self._react(client, channel, action)
            return None
        text = (action.text or "").strip()
        if not text:
            return None
        return await self._post(client, bot, channel, action, text)

    async def _react(self, client: AsyncWebClient, channel: Channel, action: Action) -> None:
        if not action.target_message_id or not action.emoji:
            raise ValueError("a reaction needs a target message and an emoji")
        name = to_slack_name(action.emoji)
        try:
            await client.reactions_add(
                channel=channel.id, timestamp=ts_of(action.target_message_id), name=name
            )
        except SlackApiError as exc:
            if exc.response.get("error") != "already_reacted":
                raise

    async def _post(
        self, client: AsyncWebClient, bot: User, channel: Channel, action: Action, text: str
    ) -> Message | None:
        # Split what people will read, then escape each part (entities never cut in two).
        parts = split_text(defuse_mentions(text), PART_LIMIT)
        first: Message | None = None
        answered = ts_of(action.reply_to or action.target_message_id or "") or None
        for part in parts:
            resp = await client.chat_postMessage(
                channel=channel.id,
                text=escape(part),
                thread_ts=ts_of(action.thread) if action.thread else None,
                link_names=False,
                unfurl_links=False,
                unfurl_media=False,
                # What this answers, so catching up after a crash can tell it was answered.
                metadata=reply_metadata(answered) if answered and first is None else None,
            )
            if first is None:
                ts = str(resp.get("ts") or "")
                first = Message(
                    message_id(channel.id, ts),
                    channel.id,
                    bot,
                    text,
                    _ts_time(ts),
                    reply_to=action.reply_to,
                    thread=action.thread,
                )
        return first

    def _bound(self) -> tuple[AsyncWebClient, User]:
        if self._client is None or self._bot is None:
            raise RuntimeError("the Slack outbox is not connected")
        return self._client, self._bot

    @contextlib.asynccontextmanager
    async def typing(self, channel: Channel) -> AsyncIterator[None]:
        # Slack offers bots no typing indicator outside assistant threads.
        yield


def _ts_time(ts: str) -> datetime:
    try:
        return datetime.fromtimestamp(float(ts), tz=UTC)
    except ValueError:
        return datetime.now(UTC)
