"""The worker's delivery rules without a broker: broker messages are stand-ins with the
fields aio-pika gives (body, redelivered, ack), the App is real (SQLite store, engine)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from kuuki.app import App, build_app
from kuuki.clock import RealClock
from kuuki.domain import ActionKind, Channel, ChatEvent, EventKind, Message, User
from kuuki.engine.config import EngineOptions
from kuuki.replay.runner import RecordingOutbox
from kuuki.scale.broker import Envelope, encode
from kuuki.scale.worker import BrokerWorker
from kuuki.settings import Settings
from kuuki.testing.llm import ScriptedLLM

CHANNEL = Channel("c1", "general", platform="discord")
BOT = User("Kuu", "Kuu", is_bot=True)


@dataclass
class Delivery:
    body: bytes
    redelivered: bool = False
    acked: int = 0

    async def ack(self) -> None:
        self.acked += 1


def posted(n: int, text: str, *, catch_up: bool = False) -> ChatEvent:
    m = Message(f"m{n}", CHANNEL.id, User("u1", "alice"), text, datetime.now(UTC))
    return ChatEvent(EventKind.POSTED, CHANNEL, m.id, m.ts, message=m, catch_up=catch_up)


async def app_for(tmp_path: Path, llm: ScriptedLLM) -> tuple[App, RecordingOutbox]:
    outbox = RecordingOutbox(RealClock(), BOT)
    app = await build_app(Settings(), clock=RealClock(), outbox=outbox, llm=llm,
                          judge_llm=llm, embedder=None,
                          store=f"sqlite:///{tmp_path}/kuuki.sqlite3",
                          engine=EngineOptions(seen_capacity=0))
    return app, outbox


async def test_a_marker_waits_for_the_events_delivered_before_it(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    llm.enqueue("caught up, here I am")
    app, outbox = await app_for(tmp_path, llm)
    try:
        worker = BrokerWorker(app)
        event = Delivery(encode(Envelope(CHANNEL, posted(1, "Kuu, are you there?",
                                                         catch_up=True))))
        marker = Delivery(encode(Envelope(CHANNEL)))
        worker.deliver(event)
        worker.deliver(marker)  # at once: the event is still waiting for the inbox commit
        await worker.drain()  # handled, committed, acknowledged
        replies = [a for _, a in outbox.sent if a.kind is ActionKind.REPLY]
        assert [a.text for a in replies] == ["caught up, here I am"]
        assert await app.store.inbox.pending_events() == []
        assert (event.acked, marker.acked) == (1, 1)
    finally:
        await app.close()


async def test_a_redelivered_event_taken_in_before_is_acked_not_handled_again(
    tmp_path: Path
) -> None:
    llm = ScriptedLLM()
    llm.enqueue("hello alice")
    app, outbox = await app_for(tmp_path, llm)
    try:
        worker = BrokerWorker(app)
        first = Delivery(encode(Envelope(CHANNEL, posted(1, "Kuu, hello"))))
        worker.deliver(first)
        await worker.drain()
        assert first.acked == 1, "acknowledged once its handling was committed"
        again = Delivery(first.body, redelivered=True)
        worker.deliver(again)
        await worker.drain()
        assert again.acked == 1
        assert [a.text for _, a in outbox.sent if a.kind is ActionKind.REPLY] == ["hello alice"]
    finally:
        await app.close()


async def test_a_takeover_answers_what_the_dead_worker_took_in_but_never_handled(
    tmp_path: Path
) -> None:
    llm = ScriptedLLM()
    llm.enqueue("sorry for the wait")
    app, outbox = await app_for(tmp_path, llm)
    try:
        pending = posted(1, "Kuu, still there?")
        assert await app.store.inbox.admit_events([pending]) == {pending.event_id}  # then it died
        worker = BrokerWorker(app)
        redelivery = Delivery(encode(Envelope(CHANNEL, pending)), redelivered=True)
        later = Delivery(encode(Envelope(CHANNEL, posted(2, "anyway, lunch?"))))
        worker.deliver(redelivery)
        worker.deliver(later)  # waits behind the takeover
        await worker.drain()  # the takeover, then what waited behind it
        assert worker.takeovers == 1
        replies = [a for _, a in outbox.sent if a.kind is ActionKind.REPLY]
        assert [(a.text, a.reply_to) for a in replies] == [("sorry for the wait", "m1")]
        assert await app.store.inbox.pending_events() == []
        assert (redelivery.acked, later.acked) == (1, 1)
        assert sorted(m.id for m in await app.store.history.messages_by_ids(["m1", "m2"])) == [
            "m1", "m2"
        ]
    finally:
        await app.close()


def test_envelopes_round_trip_and_bad_ones_name_the_field() -> None:
    import pytest

    from kuuki.scale.broker import BadEnvelope, decode

    event = replace(posted(3, "hi"), catch_up=True)
    back = decode(encode(Envelope(CHANNEL, event)))
    assert back.event == event and back.channel == CHANNEL
    assert decode(encode(Envelope(CHANNEL))).event is None
    with pytest.raises(BadEnvelope, match="'v'"):
        decode(b'{"v": 9, "kind": "event"}')
    with pytest.raises(BadEnvelope, match="lacks field 'event'"):
        decode(b'{"v": 1, "kind": "event"}')
    with pytest.raises(BadEnvelope, match="not JSON"):
        decode(b"\xff")


async def test_a_delivery_acked_at_its_commit_is_not_acked_again_by_its_admission(
    tmp_path: Path
) -> None:
    """A takeover's recovered event is handled and committed while the redelivery of it,
    taken after the takeover, still waits for the inbox's answer ("taken in before"): the
    commit acknowledges the delivery, and the answer must not acknowledge it again (the
    broker closes the channel on a second ack of one delivery tag: the worker stops; seen
    in tests/scale/test_cluster.py with a kill mid-batch)."""
    app, _ = await app_for(tmp_path, ScriptedLLM())
    try:
        worker = BrokerWorker(app)
        event = posted(1, "lunch anyone?")
        delivery = Delivery(encode(Envelope(CHANNEL, event)), redelivered=True)
        worker._recovering.add(event.event_id)  # pending when the takeover began
        worker._unacked[event.event_id] = [delivery]  # taken, its admission under way
        worker._committed([event.event_id])  # the recovered event's handling committed
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        answer.set_result(False)  # the inbox: taken in before
        worker._submitted(event.event_id, delivery, answer)
        await worker.drain()
        assert delivery.acked == 1
    finally:
        await app.close()
