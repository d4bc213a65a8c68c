"""The replay's outbox: what the bot sent is kept for the caller, unless a long benchmark
asks it to keep nothing; either way a reply becomes the bot's own message."""

from __future__ import annotations

from kuuki.clock import VirtualClock
from kuuki.domain import Action, ActionKind, Channel, User
from kuuki.replay.runner import RecordingOutbox

BOT = User("Kuu", "Kuu", is_bot=True)


async def test_a_reply_becomes_the_bots_message_and_only_a_keeping_outbox_lists_it() -> None:
    channel = Channel("c1", "general")
    reply = Action(ActionKind.REPLY, "c1", text="hello", reply_to="m1")
    for keep in (True, False):
        outbox = RecordingOutbox(VirtualClock(), BOT, keep=keep)
        sent = await outbox.send(channel, reply)
        assert sent is not None and sent.user == BOT and sent.text == "hello"
        assert sent.reply_to == "m1" and sent.channel_id == "c1"
        assert outbox.sent == ([(channel, reply)] if keep else [])
