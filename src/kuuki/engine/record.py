"""Steps 1-4 of one event: record it (store, short-term buffer), place it in a
conversation (the channel's tracker) and tell memory; edits, deletes and reactions
update what was recorded. A mixin of `kuuki.engine.core.Engine`, which provides the
attributes declared here; a posted message goes on to the decision (`Deciding._posted`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kuuki.domain import ChatEvent, EventKind, Message
from kuuki.engine.channels import ChannelState
from kuuki.ports import MemoryHook, MessageStore, Writer
from kuuki.text.safety import clean_incoming

log = logging.getLogger("kuuki.engine")


class Recording:
    store: MessageStore | None
    writer: Writer | None
    memory_hooks: Sequence[MemoryHook]
    handled: int

    if TYPE_CHECKING:  # the decision's entry, from `Deciding` (declared, not shadowed)

        async def _posted(
            self, state: ChannelState, raw: Message, *, backfill: bool = False,
            catch_up: bool = False,
        ) -> None: ...

    async def _process(self, state: ChannelState, event: ChatEvent) -> None:
        self.handled += 1
        if event.kind is EventKind.POSTED and event.message is not None:
            owed = len(state.missed)
            await self._posted(
                state, event.message, backfill=event.backfill, catch_up=event.catch_up
            )
            if len(state.missed) > owed:
                state.missed_events.append(event.event_id)
            for pending in state.pending.values():  # held for an owed answer: not yet done
                mine = pending.message.id == event.message.id
                if pending.owed and pending.event_id is None and mine:
                    pending.event_id = event.event_id
                    state.held_events.add(event.event_id)
        elif event.kind is EventKind.EDITED and event.target_id is not None:
            text = clean_incoming(event.text or "")
            state.buffer.edit(event.target_id, text)
            if state.tracker is not None:
                state.tracker.edit(event.target_id, text)
            if self.store is not None:
                await self._flush()
                await self.store.edit_message(event.target_id, text)
        elif event.kind is EventKind.DELETED and event.target_id is not None:
            state.buffer.delete(event.target_id)
            if state.tracker is not None:
                state.tracker.delete(event.target_id)
            if self.store is not None:
                await self._flush()
                await self.store.delete_message(event.target_id)
        elif (
            event.kind is EventKind.REACTION_ADDED
            and event.target_id
            and event.emoji
            and self.store is not None
            and event.user is not None
        ):
            await self._flush()
            await self.store.add_reaction(event.target_id, event.user.id, event.emoji, event.at)

    async def _flush(self) -> None:
        if self.writer is not None:
            await self.writer.flush()

    async def _record(self, state: ChannelState, msg: Message, *, own: bool) -> str | None:
        if own:
            state.bot_message_ids.add(msg.id)
        state.buffer.add(msg)
        conversation_id: str | None = None
        if state.tracker is not None:
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
