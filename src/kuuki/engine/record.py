"""Steps 1-4 of one event: filter it (step 1, kuuki.engine.filter), then let the posted
message join the channel's timeline (steps 2-4: store, short-term buffer, the tracker's
conversation, memory; kuuki.engine.timeline); edits, deletes and reactions update what was
recorded. A posted message that was let in goes on to the decision (kuuki.engine.deciding)
as `Admitted`."""

from __future__ import annotations

import logging
from datetime import datetime

from kuuki.domain import ChatEvent, EventKind
from kuuki.engine.channels import ChannelState
from kuuki.engine.filter import Admitted, MessageFilter
from kuuki.engine.intake import Seen
from kuuki.engine.timeline import Timeline
from kuuki.ports import MessageStore, Writer

log = logging.getLogger("kuuki.engine")


class Recorder:
    """Steps 1-4 (module doc)."""

    def __init__(
        self,
        filter: MessageFilter,
        timeline: Timeline,
        seen: Seen,
        *,
        messages: MessageStore | None,
        writer: Writer | None,
    ) -> None:
        self.filter = filter
        self.timeline = timeline
        self.seen = seen
        self.messages = messages
        self.writer = writer
        self.handled = 0  # events handled (`/kuuki status`)

    async def take(self, state: ChannelState, event: ChatEvent) -> Admitted | None:
        """Steps 1-4 for ``event``: the posted message as recorded (None when it was not
        a posted message, or the filter did not let it in)."""
        self.handled += 1
        if event.kind is EventKind.POSTED and event.message is not None:
            admitted = self.filter.admit(state.channel, event.message)  # 1 filter
            if admitted is not None:
                await self.timeline.record(state, admitted.message, own=admitted.own)
            return admitted
        await self._update(state, event)
        return None

    async def _update(self, state: ChannelState, event: ChatEvent) -> None:
        """An edit, a delete or a reaction: buffer, tracker and store follow it."""
        if event.kind is EventKind.EDITED and event.target_id is not None:
            text = self.filter.clean(event.text or "")
            state.buffer.edit(event.target_id, text)
            if state.tracker is not None:
                state.tracker.edit(event.target_id, text)
            if self.messages is not None:
                await self.flush()
                await self.messages.edit_message(event.target_id, text)
        elif event.kind is EventKind.DELETED and event.target_id is not None:
            state.buffer.delete(event.target_id)
            if state.tracker is not None:
                state.tracker.delete(event.target_id)
            if self.messages is not None:
                await self.flush()
                await self.messages.delete_message(event.target_id)
        elif (
            event.kind is EventKind.REACTION_ADDED
            and event.target_id
            and event.emoji
            and self.messages is not None
            and event.user is not None
        ):
            await self.flush()
            await self.messages.add_reaction(event.target_id, event.user.id, event.emoji, event.at)

    async def flush(self) -> None:
        if self.writer is not None:
            await self.writer.flush()

    async def rebuild(self, state: ChannelState, now: datetime) -> None:
        """After a restart or an eviction: refill buffer and tracker from the store."""
        if self.messages is None:
            return
        try:
            history = await self.messages.recent_messages(
                state.channel.id, limit=state.buffer.size, since=now - state.buffer.ttl
            )
        except Exception as exc:
            log.warning("could not rebuild channel %s from the store: %s", state.channel.id, exc)
            return
        for m in history:
            self.seen.mark(Seen.message_key(m.channel_id, m.id))
            state.buffer.add(m)
            if self.filter.is_own(m.user):
                state.bot_message_ids.add(m.id)
                state.bot.last_reply_at = m.ts
            if state.tracker is not None:
                state.tracker.observe(m)
