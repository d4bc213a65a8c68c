"""The channel's timeline: what a message joining it writes (steps 2-4), for a message
taken in (the recorder's, kuuki.engine.record) and for the bot's own message once sent
(the actor's, kuuki.engine.act, DESIGN §1 step 6): the short-term buffer, the tracker's
conversation, the store (through the writer) and the memory hooks, in that order; and the
event's mark in the inbox once everything its handling wrote is in the writer's order.
A collaborator of the steps, not a step: each calls it and carries on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kuuki.domain import Message
from kuuki.engine.channels import ChannelState
from kuuki.engine.intake import Seen
from kuuki.ports import MemoryHook, Writer

log = logging.getLogger("kuuki.engine")


class Timeline:
    """Module doc. ``marks_handled``: the events come from an inbox, in which each is marked
    handled once done (kuuki.engine.intake)."""

    def __init__(
        self,
        seen: Seen,
        *,
        writer: Writer | None,
        memory_hooks: Sequence[MemoryHook] = (),
        marks_handled: bool = False,
    ) -> None:
        self.seen = seen
        self.writer = writer
        self.memory_hooks = list(memory_hooks)
        self.marks_handled = marks_handled

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

    async def handled(self, event_id: str) -> None:
        """Mark an inbox event handled, after everything its handling wrote."""
        if self.writer is None or not self.marks_handled:
            return
        try:
            await self.writer.handled(event_id)
        except Exception as exc:  # the store is down: the event is handled again later
            log.warning("could not mark %s handled: %s", event_id, exc)
