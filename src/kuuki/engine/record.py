"""Steps 1-4 of one event: filter it (step 1, kuuki.engine.filter), record it (store,
short-term buffer), place it in a conversation (the channel's tracker) and tell memory;
edits, deletes and reactions update what was recorded. A posted message that was let in
goes on to the decision (kuuki.engine.deciding) as `Admitted`; the bot's own messages,
once sent, are recorded here too (`record_own`, called by kuuki.engine.act)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from kuuki.domain import ChatEvent, EventKind, Message
from kuuki.engine.channels import ChannelState
from kuuki.engine.filter import Admitted, MessageFilter
from kuuki.engine.intake import Seen
from kuuki.ports import MemoryHook, MessageStore, Writer

log = logging.getLogger("kuuki.engine")


class Recorder:
    """Steps 1-4 (module doc). ``marks_handled``: the events come from an inbox, in which
    each is marked handled once done (kuuki.engine.intake)."""

    def __init__(
        self,
        filter: MessageFilter,
        seen: Seen,
        *,
        store: MessageStore | None,
        writer: Writer | None,
        memory_hooks: Sequence[MemoryHook] = (),
        marks_handled: bool = False,
    ) -> None:
        self.filter = filter
        self.seen = seen
        self.store = store
        self.writer = writer
        self.memory_hooks = list(memory_hooks)
        self.marks_handled = marks_handled
        self.handled = 0  # events handled (`/kuuki status`)

    async def take(self, state: ChannelState, event: ChatEvent) -> Admitted | None:
        """Steps 1-4 for ``event``: the posted message as recorded (None when it was not
        a posted message, or the filter did not let it in)."""
        self.handled += 1
        if event.kind is EventKind.POSTED and event.message is not None:
            admitted = self.filter.admit(state.channel, event.message)  # 1 filter
            if admitted is not None:
                await self.record(state, admitted.message, own=admitted.own)
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
            if self.store is not None:
                await self.flush()
                await self.store.edit_message(event.target_id, text)
        elif event.kind is EventKind.DELETED and event.target_id is not None:
            state.buffer.delete(event.target_id)
            if state.tracker is not None:
                state.tracker.delete(event.target_id)
            if self.store is not None:
                await self.flush()
                await self.store.delete_message(event.target_id)
        elif (
            event.kind is EventKind.REACTION_ADDED
            and event.target_id
            and event.emoji
            and self.store is not None
            and event.user is not None
        ):
            await self.flush()
            await self.store.add_reaction(event.target_id, event.user.id, event.emoji, event.at)

    async def flush(self) -> None:
        if self.writer is not None:
            await self.writer.flush()

    async def record_own(self, state: ChannelState, posted: Message) -> None:
        """The bot's own message, just sent, joins the timeline (and its echo is known)."""
        self.seen.mark(Seen.message_key(posted.channel_id, posted.id))
        await self.record(state, posted, own=True)

    async def record(self, state: ChannelState, msg: Message, *, own: bool) -> str | None:
        """Steps 2-4: buffer, tracker (returns the conversation), store, memory hooks."""
        if own:
            state.bot_message_ids.add(msg.id)
        state.buffer.add(msg)  # 2 record
        conversation_id: str | None = None
        if state.tracker is not None:  # 3 structure
            try:
                state.tracker.observe(msg)
                conversation_id = state.tracker.conversation_of(msg.id)
            except Exception as exc:
                log.warning("tracker failed on %s: %s", msg.id, exc)
        if self.writer is not None:
            await self.writer.add_message(msg, conversation_id=conversation_id)
        for hook in self.memory_hooks:  # 4 remember
            try:
                await hook.observe(state.channel, msg, from_bot=own)
            except Exception as exc:
                log.warning("memory hook %s failed on %s: %s", type(hook).__name__, msg.id, exc)
        return conversation_id

    async def rebuild(self, state: ChannelState, now: datetime) -> None:
        """After a restart or an eviction: refill buffer and tracker from the store."""
        if self.store is None:
            return
        try:
            history = await self.store.recent_messages(
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

    async def handled_event(self, event_id: str) -> None:
        """Mark an inbox event handled, after everything its handling wrote."""
        if self.writer is None or not self.marks_handled:
            return
        try:
            await self.writer.handled(event_id)
        except Exception as exc:  # the store is down: the event is handled again later
            log.warning("could not mark %s handled: %s", event_id, exc)
