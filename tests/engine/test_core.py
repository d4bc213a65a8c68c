from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kuuki.app import App, build_app
from kuuki.clock import VirtualClock
from kuuki.decide.judge.base import AddressedOnlyJudge
from kuuki.decide.situation import Situation
from kuuki.domain import (
    ActionKind,
    Channel,
    ChatEvent,
    Decision,
    DecisionTrace,
    EventKind,
    Message,
    Stage,
    User,
    Verdict,
    Visibility,
)
from kuuki.errors import LLMBadOutput, LLMTimeout
from kuuki.settings import LLMSettings, Settings
from kuuki.testing import RecordingOutbox
from kuuki.testing.faults import FaultyStore
from kuuki.testing.llm import ScriptedLLM

GENERAL = Channel("general", "general")
ALICE = User("alice", "alice")
BOB = User("bob", "bob")


@dataclass
class Harness:
    app: App
    clock: VirtualClock
    outbox: RecordingOutbox
    llm: Any
    decisions: list[Decision] = field(default_factory=list)
    n: int = 0

    async def say(
        self,
        user: User,
        text: str,
        *,
        channel: Channel = GENERAL,
        mid: str | None = None,
        **kw: Any,
    ) -> str:
        self.n += 1
        mid = mid or f"m{self.n}"
        msg = Message(mid, channel.id, user, text, self.clock.now(), **kw)
        await self.app.engine.handle(
            ChatEvent(EventKind.POSTED, channel, mid, msg.ts, message=msg)
        )
        await self.app.engine.idle()
        return mid

    def last(self) -> Decision:
        return self.decisions[-1]


async def make(
    tmp_path: Path,
    *,
    llm: Any = None,
    settings: Settings | None = None,
    judge: Any = None,
    name: str = "store.sqlite3",
    clock: VirtualClock | None = None,
    store: FaultyStore | None = None,
) -> Harness:
    clock = clock or VirtualClock()
    outbox = RecordingOutbox(clock, User("Kuu", "Kuu", is_bot=True))
    app = await build_app(
        settings or Settings(),
        clock=clock,
        outbox=outbox,
        llm=llm,
        judge_llm=None,
        store=store if store is not None else f"sqlite:///{tmp_path / name}",
        judge=judge or AddressedOnlyJudge(),
    )
    h = Harness(app, clock, outbox, llm)
    app.engine.on_decision(h.decisions.append)
    return h


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    harness = await make(tmp_path, llm=ScriptedLLM())
    yield harness
    await harness.app.close()


async def test_addressed_message_gets_a_generated_reply_that_joins_the_timeline(
    h: Harness,
) -> None:
    h.llm.enqueue("Luna is a lovely name for a cat.")
    await h.say(ALICE, "morning all")
    mid = await h.say(ALICE, "Kuu, what's a good name for a cat?")
    d = h.last()
    assert d.message_id == mid
    assert d.action.kind is ActionKind.REPLY and d.stage is Stage.ADDRESSED
    assert d.action.text == "Luna is a lovely name for a cat."
    assert [a.text for _, a in h.outbox.sent] == ["Luna is a lovely name for a cat."]
    # The prompt held the conversation, and the bot's reply is now in buffer and store.
    assert "what's a good name for a cat" in h.llm.history[-1].prompt
    state = h.app.engine.state("general")
    assert state is not None
    assert [m.text for m in state.buffer.recent()][-1] == "Luna is a lovely name for a cat."
    await h.app.writer.flush()
    stored = await h.app.store.messages.recent_messages("general")
    assert [m.user.id for m in stored] == ["alice", "alice", "Kuu"]
    row = await h.app.store.browse.decision_for(mid)
    assert row["action"] == "reply" and row["trace"]["llm_calls"][0]["outcome"] == "ok"


async def test_ambient_message_gets_no_action_and_no_llm_call(h: Harness) -> None:
    await h.say(ALICE, "anyone watching the game tonight?")
    assert h.last().action.kind is ActionKind.NONE
    assert h.llm.history == [] and h.outbox.sent == []


async def test_reply_to_the_bot_and_platform_mention_are_addressed(h: Harness) -> None:
    h.llm.enqueue("hi!", "sure")
    await h.say(ALICE, "hello", mentions=("Kuu",))
    bot_msg = h.outbox.sent[-1]
    assert bot_msg[1].kind is ActionKind.REPLY
    state = h.app.engine.state("general")
    assert state is not None
    bot_id = next(iter(state.bot_message_ids))
    await h.say(BOB, "really?", reply_to=bot_id)
    assert h.last().stage is Stage.ADDRESSED and h.last().action.text == "sure"


async def test_same_event_delivered_twice_is_handled_once(h: Harness) -> None:
    h.llm.enqueue("once")
    msg = Message("dup", "general", ALICE, "Kuu, ping", h.clock.now())
    ev = ChatEvent(EventKind.POSTED, GENERAL, "dup", msg.ts, message=msg)
    assert await h.app.engine.handle(ev) is True
    assert await h.app.engine.handle(ev) is False
    await h.app.engine.idle()
    assert await h.app.engine.handle(ev) is False
    await h.app.engine.idle()
    assert len(h.decisions) == 1 and len(h.outbox.sent) == 1


class ExplodingJudge:
    def __init__(self) -> None:
        self.calls = 0

    async def judge(self, situation: Situation, trace: DecisionTrace) -> Verdict:
        self.calls += 1
        if "boom" in situation.message.text:
            raise RuntimeError("judge exploded")
        return await AddressedOnlyJudge().judge(situation, trace)


async def test_a_failure_inside_one_event_is_traced_and_the_queue_goes_on(
    tmp_path: Path,
) -> None:
    h = await make(tmp_path, llm=ScriptedLLM("fine"), judge=ExplodingJudge())
    try:
        await h.say(ALICE, "boom")
        assert h.last().stage is Stage.ERROR
        assert "judge exploded" in h.last().trace.errors[0]
        await h.say(ALICE, "Kuu, still there?")
        assert h.last().action.text == "fine"
    finally:
        await h.app.close()


async def test_outbox_failure_is_recorded_and_does_not_stop_the_channel(h: Harness) -> None:
    h.llm.enqueue("a", "b")
    h.outbox.fail_with = ConnectionError("platform down")
    await h.say(ALICE, "Kuu, one")
    assert any("platform down" in e for e in h.last().trace.errors)
    h.outbox.fail_with = None
    await h.say(ALICE, "Kuu, two")
    assert h.last().action.text == "b" and len(h.outbox.sent) == 1


@pytest.mark.parametrize(
    ("failure", "outcome"),
    [(LLMTimeout("took too long"), "timeout"), (LLMBadOutput("garbage"), "invalid"), ("", "ok")],
)
async def test_llm_failures_fall_back_to_a_reaction_and_say_so(
    h: Harness, failure: Any, outcome: str
) -> None:
    # A failed call falls back at once; an empty answer is rejected by the guard, retried
    # once with the stricter prompt, and rejected again before the fallback.
    h.llm.enqueue(failure, "")
    await h.say(ALICE, "Kuu, thanks for the help!")
    d = h.last()
    assert d.action.kind is ActionKind.REACT and d.action.emoji == "😊"
    assert d.trace.llm_calls[0].outcome == outcome
    assert d.reason.startswith("addressed by name → reply ")
    assert d.reason.endswith("reacted 😊")
    if outcome == "ok":
        assert [g.subject for g in d.trace.guard] == ["reply", "reply-retry"]
        assert [g.check for g in d.trace.guard] == ["empty", "empty"]
        assert "rejected twice" in d.reason
    else:
        assert d.trace.guard == [] and len(d.trace.llm_calls) == 1
        h.llm.enqueue("")  # the "" meant for a retry was not needed
        await h.say(ALICE, "Kuu?")
    h.llm.enqueue("back again")
    await h.say(ALICE, "Kuu, and now?")
    assert h.last().action.text == "back again"


async def test_unreachable_openai_endpoint_keeps_the_engine_running(tmp_path: Path) -> None:
    from kuuki.llm.registry import create

    dead = create("openai", model="x", base_url="http://127.0.0.1:9/v1", api_key="sk-x",
                  max_retries=0, timeout_s=2)
    h = await make(tmp_path, llm=dead)
    try:
        await h.say(ALICE, "Kuu, are you there?")
        call = h.last().trace.llm_calls[0]
        assert call.outcome == "unavailable"
        assert h.last().action.kind is ActionKind.REACT
        assert "sk-x" not in call.detail
    finally:
        await h.app.close()


async def test_nasty_text_is_stored_safely(h: Harness) -> None:
    h.llm.enqueue("ok")
    huge = "あ" * 100_000
    await h.say(ALICE, huge, mid="huge")
    await h.say(ALICE, "zero\u200bwidth\x00ctrl\x07 \ud800 lone", mid="nasty")
    await h.say(ALICE, "", mid="empty")
    assert h.last().stage is Stage.FILTERED and h.last().reason == "empty message"
    await h.say(ALICE, "Kuu, still fine?")
    assert h.last().action.text == "ok"
    await h.app.writer.flush()
    stored = {m.id: m for m in await h.app.store.messages.recent_messages("general", limit=10)}
    assert stored["huge"].text.startswith("あ" * 1000) and len(stored["huge"].text) <= 20_010
    nasty = stored["nasty"].text
    assert "\x00" not in nasty and "\x07" not in nasty and "\ud800" not in nasty
    assert "zero\u200bwidth" in nasty


async def test_edits_deletes_and_reactions_update_buffer_and_store(h: Harness) -> None:
    mid = await h.say(ALICE, "teh typo")
    other = await h.say(BOB, "to be deleted")
    at = h.clock.now()
    engine = h.app.engine
    await engine.handle(ChatEvent(EventKind.EDITED, GENERAL, "e1", at, target_id=mid, text="the typo"))
    await engine.handle(ChatEvent(EventKind.DELETED, GENERAL, "d1", at, target_id=other))
    await engine.handle(
        ChatEvent(EventKind.REACTION_ADDED, GENERAL, "r1", at, target_id=mid, user=BOB, emoji="👍")
    )
    await engine.handle(ChatEvent(EventKind.DELETED, GENERAL, "d2", at, target_id="never-seen"))
    await engine.idle()
    state = engine.state("general")
    assert state is not None
    assert [m.text for m in state.buffer.recent()] == ["the typo"]
    stored = await h.app.store.messages.recent_messages("general")
    assert [m.text for m in stored] == ["the typo"]
    assert [r[1] for r in await h.app.store.messages.reactions(mid)] == ["👍"]


async def test_denied_channel_leaves_nothing_behind(tmp_path: Path) -> None:
    settings = replace(Settings(), channel_deny=("secret",))
    h = await make(tmp_path, llm=ScriptedLLM(), settings=settings)
    try:
        await h.say(ALICE, "Kuu, hello", channel=Channel("secret", "secret"))
        await h.app.writer.flush()
        assert h.decisions == [] and h.outbox.sent == []
        assert await h.app.store.messages.recent_messages("secret") == []
    finally:
        await h.app.close()


async def test_dms_off_and_bot_loop_guard(tmp_path: Path) -> None:
    settings = replace(Settings(), dms_enabled=False)
    h = await make(tmp_path, llm=ScriptedLLM(default="hi"), settings=settings)
    try:
        await h.say(ALICE, "Kuu, psst", channel=Channel("dm1", "dm", Visibility.DM))
        assert h.last().stage is Stage.FILTERED and "DMs" in h.last().reason
        other = User("otterbot", "otterbot", is_bot=True)
        await h.say(other, "Kuu, beep")
        assert h.last().action.kind is ActionKind.REPLY  # a bot may address us once
        await h.say(other, "Kuu, beep beep")
        assert h.last().stage is Stage.FILTERED and "loop guard" in h.last().reason
    finally:
        await h.app.close()


async def test_channels_run_in_parallel_and_keep_order(h: Harness) -> None:
    engine = h.app.engine
    chans = [Channel(f"c{i}", f"c{i}") for i in range(5)]
    for n in range(20):
        for ch in chans:
            msg = Message(f"{ch.id}-{n}", ch.id, ALICE, f"msg {n}", h.clock.now())
            await engine.handle(ChatEvent(EventKind.POSTED, ch, msg.id, msg.ts, message=msg))
    await engine.idle()
    for ch in chans:
        ids = [d.message_id for d in h.decisions if d.channel_id == ch.id]
        assert ids == [f"{ch.id}-{n}" for n in range(20)]


async def test_restart_rebuilds_the_buffer_and_remembers_handled_events(tmp_path: Path) -> None:
    clock = VirtualClock()
    h = await make(tmp_path, llm=ScriptedLLM("hello"), clock=clock)
    await h.say(ALICE, "before the restart", mid="a1")
    await h.say(ALICE, "Kuu, hi", mid="a2")
    await h.app.close()

    h2 = await make(tmp_path, llm=ScriptedLLM("again"), clock=clock)
    try:
        msg = Message("a2", "general", ALICE, "Kuu, hi", clock.now())
        again = ChatEvent(EventKind.POSTED, GENERAL, "a2", msg.ts, message=msg)
        assert await h2.app.engine.handle(again) is False
        await h2.say(BOB, "after", mid="b1")
        state = h2.app.engine.state("general")
        assert state is not None
        texts = [m.text for m in state.buffer.recent()]
        assert texts == ["before the restart", "Kuu, hi", "hello", "after"]
        # The bot recognises its own earlier message after the restart.
        await h2.say(BOB, "what did you mean?", reply_to="bot-1")
        assert h2.last().stage is Stage.ADDRESSED
    finally:
        await h2.app.close()


class DebounceJudge:
    """Defers ambient messages; then speaks on the settled pass, and re-checks questions."""

    async def judge(self, situation: Situation, trace: DecisionTrace) -> Verdict:
        if situation.extra.get("recheck"):
            return Verdict(ActionKind.REPLY, Stage.LOCAL, 70, "question still unanswered")
        if not situation.extra.get("settled"):
            return Verdict(ActionKind.NONE, Stage.LOCAL, 0, "wait", defer_s=20)
        recheck = 300.0 if situation.message.text.endswith("?") else None
        return Verdict(ActionKind.REACT, Stage.LOCAL, 50, "settled", recheck_s=recheck)


async def test_debounce_supersede_and_recheck_run_on_the_clock(tmp_path: Path) -> None:
    h = await make(tmp_path, llm=ScriptedLLM(default="answer"), judge=DebounceJudge())
    try:
        await h.say(ALICE, "first")
        assert h.decisions == []  # waiting for the burst to settle
        await h.clock.advance(5)
        await h.say(BOB, "second?")
        assert [d.reason for d in h.decisions] == ["superseded"]
        await h.clock.advance(19)
        assert len(h.decisions) == 1
        await h.clock.advance(2)
        await h.app.engine.idle()
        assert h.decisions[-1].reason == "settled"
        assert h.decisions[-1].action.kind is ActionKind.REACT
        await h.clock.advance(300)
        await h.app.engine.idle()
        assert h.decisions[-1].reason == "question still unanswered"
        assert h.decisions[-1].action.text == "answer"
    finally:
        await h.app.close()


async def test_quiet_mode_silences_ambient_but_not_addressed(h: Harness) -> None:
    h.llm.enqueue("yes?")
    await h.app.engine.quiet(GENERAL, 30)
    await h.say(ALICE, "hmm")
    assert h.last().reason == "asked to be quiet here"
    await h.say(ALICE, "Kuu?")
    assert h.last().action.text == "yes?"
    await h.clock.advance(31 * 60)
    assert h.app.engine.status(GENERAL)["quiet_until"] is None


async def test_status_counts_llm_use(h: Harness) -> None:
    h.llm.enqueue("one")
    await h.say(ALICE, "Kuu, hi")
    st = h.app.engine.status(GENERAL)
    assert st["listening"] is True and st["llm_calls_today"] == 1
    assert h.clock.now() - h.decisions[0].decided_at < timedelta(seconds=1)


async def test_backfilled_history_is_recorded_but_never_answered(h: Harness) -> None:
    msg = Message("old", "general", ALICE, "Kuu, are you there?", h.clock.now())
    ev = ChatEvent(EventKind.POSTED, GENERAL, "old", msg.ts, message=msg, backfill=True)
    await h.app.engine.handle(ev)
    await h.app.engine.idle()
    assert h.decisions == [] and h.llm.history == []
    state = h.app.engine.state("general")
    assert state is not None and [m.id for m in state.buffer.recent()] == ["old"]


async def test_a_language_the_model_does_not_write_gets_the_fallback_without_asking_it(
    tmp_path: Path,
) -> None:
    llm = ScriptedLLM("Sure, see you there!", default=None)  # a second call fails the test
    s = Settings(llm=LLMSettings(languages=("en",)))
    h = await make(tmp_path, llm=llm, settings=s)
    try:
        await h.say(ALICE, "くう、明日のランチ来る？")
        d = h.last()
        assert d.action.kind is ActionKind.REACT and d.decided is ActionKind.REPLY
        assert d.reason.endswith("reply not written: scripted does not write Japanese: "
                                 f"reacted {d.action.emoji}")
        assert d.trace.llm_calls == [] and d.trace.features["language"] == "ja"
        await h.say(ALICE, "Kuu, lunch tomorrow?")
        assert h.last().action.text == "Sure, see you there!"
    finally:
        await h.app.close()


async def test_idle_channels_are_dropped_once_traffic_stops_and_rebuilt_when_they_speak(
    tmp_path: Path,
) -> None:
    """The memory layer's maintenance evicts idle channels; it must keep running while
    channels are live even after their buffers have expired (issue 11's soak: it stopped
    on empty buffers and kept every channel in memory for good)."""
    clock = VirtualClock()
    h = await make(tmp_path, llm=ScriptedLLM(), clock=clock)
    try:
        rooms = [Channel(f"room{i}", f"room{i}") for i in range(3)]
        for room in rooms:
            await h.say(ALICE, f"hello {room.name}", channel=room)
        assert len(h.app.engine.channels) == 3
        idle_s = h.app.settings.channel_idle_minutes * 60
        await clock.advance(idle_s + 2 * 15 * 60)  # past the idle time, two maintenance rounds
        await h.app.engine.idle()
        assert len(h.app.engine.channels) == 0
        assert clock.pending() == 0  # and an idle bot leaves no timer behind
        await h.say(BOB, "back again", channel=rooms[0])
        state = h.app.engine.state("room0")
        assert state is not None  # rebuilt from the store (what is still within the TTL)
        assert [m.text for m in state.buffer.recent()] == ["back again"]
    finally:
        await h.app.close()


async def test_no_more_channels_than_the_live_cap_are_held(tmp_path: Path) -> None:
    settings = replace(Settings(), max_live_channels=2)
    h = await make(tmp_path, llm=ScriptedLLM(), settings=settings)
    try:
        for i in range(5):
            await h.say(ALICE, f"hi {i}", channel=Channel(f"room{i}", f"room{i}"))
        assert len(h.app.engine.channels) == 2
        assert "room4" in h.app.engine.channels and "room0" not in h.app.engine.channels
    finally:
        await h.app.close()


async def test_an_owed_catch_up_answer_stays_in_the_inbox_until_it_is_decided(
    tmp_path: Path,
) -> None:
    """An addressed message read back while catching up is answered at the caught-up
    marker. Until then its event stays unhandled in the inbox: a crash in between must
    leave it owed after the restart, not handled with no answer (PostgreSQL crash test)."""
    h = await make(tmp_path, llm=ScriptedLLM("Here now!"))
    try:
        msg = Message("late1", GENERAL.id, ALICE, "Kuu, are you there?", h.clock.now())
        event = ChatEvent(EventKind.POSTED, GENERAL, "ev-late1", msg.ts, message=msg,
                          catch_up=True)
        assert await h.app.engine.handle(event)
        await h.app.engine.idle()
        await h.app.writer.flush()
        assert [e.event_id for e in await h.app.store.inbox.pending_events()] == ["ev-late1"]
        assert h.decisions == []
        h.app.engine.caught_up(GENERAL)
        await h.app.engine.idle()
        assert [d.message_id for d in h.decisions] == ["late1"]
        assert h.outbox.sent[-1][1].text == "Here now!"
        await h.app.writer.flush()
        assert await h.app.store.inbox.pending_events() == []
    finally:
        await h.app.close()


async def test_an_event_the_store_failed_under_stays_in_the_inbox(tmp_path: Path) -> None:
    """A store outage in the middle of handling: the event is not marked handled, so the
    next start handles it again (a crash test found such events marked handled, never
    answered). Here the outage meets an edit, which commits what is queued before it
    changes the stored message."""
    store = await FaultyStore.open(f"sqlite:///{tmp_path / 'faulty.sqlite3'}")
    h = await make(tmp_path, llm=ScriptedLLM("hi!"), store=store)
    try:
        mid = await h.say(ALICE, "Kuu, still there?", mid="q1")
        store.writes.fail()  # the database refuses every commit from now on
        at = h.clock.now()
        assert await h.app.engine.handle(
            ChatEvent(EventKind.EDITED, GENERAL, "e1", at, target_id=mid, text="Kuu, there?")
        )
        await h.app.engine.idle()
        assert store.writes.failed >= 1  # the edit's commit was refused
        store.writes.heal()
        await h.say(BOB, "hello", mid="b1")
        await h.app.writer.flush()
        assert [e.event_id for e in await store.inbox.pending_events()] == ["e1"]
        edited = await store.messages.get_message(mid)
        assert edited is not None and edited.text == "Kuu, still there?"
        assert sorted(m.id for m in await store.history.messages_by_ids(["q1", "b1"])) == ["b1", "q1"]
    finally:
        await h.app.close()


async def test_past_its_backlog_the_engine_takes_no_more_in_until_it_catches_up(
    h: Harness,
) -> None:
    engine = h.app.engine
    engine.max_backlog = 5
    gate = asyncio.Event()

    async def stuck(_: Any) -> None:  # the channel is busy with what it was given
        await gate.wait()

    engine.prepare = stuck

    def event(i: int) -> ChatEvent:
        msg = Message(f"b{i}", GENERAL.id, ALICE, f"line {i}", h.clock.now())
        return ChatEvent(EventKind.POSTED, GENERAL, msg.id, msg.ts, message=msg)

    first = [engine.submit(event(i)) for i in range(8)]
    try:
        assert all([await f for f in first])  # one commit, taken in while there was room
        later = [asyncio.ensure_future(engine.submit(event(i))) for i in range(8, 12)]
        # the intake stops at the door, before its commit (broken, it acknowledges them)
        holding = asyncio.ensure_future(engine.backlog.holding.wait())
        done, _ = await asyncio.wait([holding, *later], return_when=asyncio.FIRST_COMPLETED)
        assert done == {holding}
        assert not any(f.done() for f in later)  # held at the platform, not acknowledged
        assert {e.event_id for e in await h.app.store.inbox.pending_events()} == {
            f"b{i}" for i in range(8)
        }
    finally:
        gate.set()  # the channel goes on (and the harness can close)
    assert all([await f for f in later])
    await engine.idle()
    assert [d.message_id for d in h.decisions] == [f"b{i}" for i in range(12)]
