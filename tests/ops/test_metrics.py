"""The Prometheus metrics of a running engine (issue 27): scraped over HTTP from the
operator server while an engine with a scripted model handles messages, the counters move
by exactly what happened, and the exposition parses with prometheus-client's own parser."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kuuki.app import App, build_app
from kuuki.clock import VirtualClock
from kuuki.decide.judge.base import AddressedOnlyJudge
from kuuki.domain import ActionKind, Channel, ChatEvent, Decision, EventKind, Message, User
from kuuki.errors import LLMTimeout
from kuuki.ops.metrics import Metrics
from kuuki.ops.server import app_metrics, serving
from kuuki.settings import Settings
from kuuki.testing import RecordingOutbox
from kuuki.testing.llm import ScriptedLLM

GENERAL = Channel("general", "general")
RANDOM = Channel("random", "random")
ALICE = User("alice", "alice")
LATE = timedelta(seconds=3)  # each message reaches the bot 3 s after it was written

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass
class Bot:
    app: App
    clock: VirtualClock
    llm: ScriptedLLM
    metrics: Metrics
    url: str
    decisions: list[Decision] = field(default_factory=list)
    n: int = 0

    async def say(self, text: str, channel: Channel = GENERAL) -> None:
        self.n += 1
        msg = Message(f"m{self.n}", channel.id, ALICE, text, self.clock.now() - LATE)
        await self.app.engine.handle(ChatEvent(EventKind.POSTED, channel, msg.id, msg.ts,
                                               message=msg))
        await self.app.engine.idle()

    async def scrape(self) -> Samples:
        async with httpx.AsyncClient() as client:
            response = await client.get(self.url)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
        out: Samples = {}
        for family in text_string_to_metric_families(response.text):
            for s in family.samples:
                out[(s.name, frozenset(s.labels.items()))] = s.value
        return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def started(tmp_path: Path, settings: Settings | None = None) -> AsyncIterator[Bot]:
    clock = VirtualClock()
    llm = ScriptedLLM(name="model-x")
    settings = settings or Settings()
    app = await build_app(
        settings, clock=clock, outbox=RecordingOutbox(clock, User("Kuu", "Kuu", is_bot=True)),
        llm=llm, judge_llm=None, store=f"sqlite:///{tmp_path / 'store.sqlite3'}",
        judge=AddressedOnlyJudge(),
    )
    metrics = app_metrics(app)
    try:
        async with serving(settings, metrics, port=0) as port:
            bot = Bot(app, clock, llm, metrics, f"http://127.0.0.1:{port}/metrics")
            app.engine.on_decision(bot.decisions.append)
            yield bot
    finally:
        await app.close()


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Bot]:
    async for b in started(tmp_path):
        yield b


def prompt_tokens(llm: ScriptedLLM, purpose: str) -> int:
    """What the scripted model counts as a call's prompt tokens (its words), summed."""
    return sum(len(m.content.split()) for c in llm.history if c.purpose == purpose
               for m in c.messages)


async def test_counters_move_by_what_the_engine_did(bot: Bot) -> None:
    before = await bot.scrape()
    assert value(before, "kuuki_decisions_total", action="reply", stage="addressed") == 0
    bot.llm.enqueue("Luna is a lovely name.", purpose="reply")
    bot.llm.enqueue("See you at lunch then!", purpose="reply")
    bot.llm.enqueue("", purpose="reply")  # rejected by the guard, and again on the retry
    bot.llm.enqueue("", purpose="reply-retry")
    await bot.say("morning all")
    await bot.say("Kuu, a name for my cat?")
    during = await bot.scrape()
    assert value(during, "kuuki_decisions_total", action="reply", stage="addressed") == 1
    assert value(during, "kuuki_decisions_total", action="none", stage="local") == 1
    await bot.say("anyone for lunch?")
    await bot.say("Kuu, lunch at noon?")
    await bot.say("Kuu, thanks!")  # the guard rejects twice: a reaction instead
    after = await bot.scrape()
    assert [d.action.kind for d in bot.decisions] == [
        ActionKind.NONE, ActionKind.REPLY, ActionKind.NONE, ActionKind.REPLY, ActionKind.REACT]

    assert value(after, "kuuki_decisions_total", action="reply", stage="addressed") == 2
    assert value(after, "kuuki_decisions_total", action="none", stage="local") == 2
    assert value(after, "kuuki_decisions_total", action="react", stage="addressed") == 1
    assert value(after, "kuuki_llm_calls_total", model="model-x", purpose="reply") == 3
    assert value(after, "kuuki_llm_calls_total", model="model-x", purpose="reply-retry") == 1
    tokens = {
        kind: value(after, "kuuki_llm_tokens_total", model="model-x", purpose="reply", kind=kind)
        for kind in ("prompt", "completion")
    }
    # 5 + 5 words written; the rejected answers were empty
    assert tokens == {"prompt": prompt_tokens(bot.llm, "reply"), "completion": 10}
    assert tokens["prompt"] > 0
    assert value(after, "kuuki_guard_verdicts_total", verdict="ok") == 2
    assert value(after, "kuuki_guard_verdicts_total", verdict="rejected") == 2
    assert value(after, "kuuki_guard_verdicts_total", verdict="fallback") == 1
    # Two replies sent, each 3 s after its message was written (the clock stood still).
    assert value(after, "kuuki_reply_latency_seconds_count") == 2
    assert value(after, "kuuki_reply_latency_seconds_sum") == 2 * LATE.total_seconds()
    assert value(after, "kuuki_reply_latency_seconds_bucket", le="2.0") == 0
    assert value(after, "kuuki_reply_latency_seconds_bucket", le="5.0") == 2
    assert value(after, "kuuki_llm_errors_total", model="model-x", purpose="reply",
                 outcome="timeout") == 0
    # Channel-free by default: no sample carries a channel label.
    assert not any("channel" in dict(labels) for _, labels in after)


async def test_gauges_are_read_when_scraped(bot: Bot) -> None:
    samples = await bot.scrape()
    assert value(samples, "kuuki_live_channels") == 0
    assert value(samples, "kuuki_llm_breaker_state", model="model-x", state="closed") == 1
    # Three timeouts in a row open the model's circuit; the fourth call is skipped.
    bot.llm.enqueue(LLMTimeout("slow"), LLMTimeout("slow"), LLMTimeout("slow"),
                    purpose="reply")
    for text in ("Kuu?", "Kuu, hello?", "Kuu, anyone?", "Kuu, still there?"):
        await bot.say(text)
    samples = await bot.scrape()
    assert value(samples, "kuuki_live_channels") == 1
    assert value(samples, "kuuki_llm_breaker_state", model="model-x", state="open") == 1
    assert value(samples, "kuuki_llm_breaker_state", model="model-x", state="closed") == 0
    assert value(samples, "kuuki_llm_errors_total", model="model-x", purpose="reply",
                 outcome="timeout") == 3
    assert value(samples, "kuuki_llm_errors_total", model="model-x", purpose="reply",
                 outcome="skipped") == 1
    assert value(samples, "kuuki_llm_calls_total", model="model-x", purpose="reply") == 3
    # Events handed over but not yet committed are the intake's queue, read at scrape time.
    waiting = [bot.app.engine.submit(ChatEvent(
        EventKind.POSTED, RANDOM, f"q{i}", bot.clock.now(),
        message=Message(f"q{i}", RANDOM.id, ALICE, "hi", bot.clock.now()))) for i in range(3)]
    read = {(s.name, s.labels.get("queue")): s.value for f in text_string_to_metric_families(
        bot.metrics.exposition()[0].decode()) for s in f.samples}
    assert read[("kuuki_queue_depth", "intake")] == 3
    assert read[("kuuki_intake_lag_seconds", None)] > 0  # the oldest has waited since submit
    for w in waiting:
        assert await w is True
    await bot.app.engine.idle()
    samples = await bot.scrape()
    assert value(samples, "kuuki_queue_depth", queue="intake") == 0
    assert value(samples, "kuuki_intake_lag_seconds") == 0
    assert value(samples, "kuuki_live_channels") == 2


async def test_a_channel_label_only_when_the_setting_asks(tmp_path: Path) -> None:
    settings = replace(Settings(), dashboard_metrics_per_channel=True)
    async for bot in started(tmp_path, settings):
        bot.llm.enqueue("hello there", purpose="reply")
        await bot.say("Kuu, hi", GENERAL)
        await bot.say("morning", RANDOM)
        samples = await bot.scrape()
        assert value(samples, "kuuki_decisions_total", action="reply", stage="addressed",
                     channel="general") == 1
        assert value(samples, "kuuki_decisions_total", action="none", stage="local",
                     channel="random") == 1
        assert value(samples, "kuuki_decisions_total", action="reply", stage="addressed") == 0


def test_two_apps_in_one_process_count_apart() -> None:
    a, b = Metrics(), Metrics()  # each on its own registry: no "Duplicated timeseries"
    a.guard.labels("ok").inc()
    assert b"kuuki_guard_verdicts_total{" not in b.exposition()[0]
    assert b'kuuki_guard_verdicts_total{verdict="ok"} 1.0' in a.exposition()[0]


TRANSCRIPT = [
    '{"id": "r1", "t": "2026-01-05T10:00:00+00:00", "channel": "general", "user": "alice", "text": "morning all"}',
    '{"id": "r2", "t": "2026-01-05T10:00:20+00:00", "channel": "general", "user": "bob", "text": "Kuu, what is a good name for a cat?"}',
    '{"id": "r3", "t": "2026-01-05T10:01:00+00:00", "channel": "random", "user": "carol", "text": "anyone watching the game?"}',
    '{"id": "r4", "t": "2026-01-05T10:01:30+00:00", "channel": "random", "user": "dave", "text": "Kuu, who won yesterday?"}',
    '{"id": "r5", "t": "2026-01-05T10:02:00+00:00", "channel": "general", "user": "alice", "text": "Kuu, and a name for a dog?"}',
]


async def test_a_replay_scraped_as_it_runs(tmp_path: Path) -> None:
    from kuuki.replay.runner import replay
    from kuuki.replay.transcript import parse_lines

    transcript = parse_lines(TRANSCRIPT)
    seen: list[float] = []
    clock = VirtualClock(transcript.events[0].at)
    llm = ScriptedLLM(name="model-y")
    llm.enqueue("Luna, or Miso.", "The home side, two to one.", "Biscuit suits a dog.",
                purpose="reply")
    app = await build_app(
        Settings(), clock=clock, outbox=RecordingOutbox(clock, User("Kuu", "Kuu", is_bot=True)),
        llm=llm, judge_llm=None, store=f"sqlite:///{tmp_path / 'replay.sqlite3'}",
        judge=AddressedOnlyJudge(),
    )
    metrics = app_metrics(app)

    def during(line: dict[str, object]) -> None:  # after each decision: what /metrics says
        text = metrics.exposition()[0].decode()
        seen.append(sum(s.value for f in text_string_to_metric_families(text)
                        for s in f.samples if s.name == "kuuki_decisions_total"))

    try:
        async with serving(Settings(), metrics, port=0) as port:
            decisions = await replay(app.engine, clock, transcript, emit=during)
            async with httpx.AsyncClient() as client:
                text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
    finally:
        await app.close()
    assert [d.action.kind for d in decisions] == [
        ActionKind.NONE, ActionKind.REPLY, ActionKind.NONE, ActionKind.REPLY, ActionKind.REPLY]
    assert seen == [1, 2, 3, 4, 5]  # the counter moved by one with each decision
    samples: Samples = {(s.name, frozenset(s.labels.items())): s.value
                        for f in text_string_to_metric_families(text) for s in f.samples}
    assert value(samples, "kuuki_decisions_total", action="reply", stage="addressed") == 3
    assert value(samples, "kuuki_decisions_total", action="none", stage="local") == 2
    assert value(samples, "kuuki_llm_calls_total", model="model-y", purpose="reply") == 3
    assert value(samples, "kuuki_llm_tokens_total", model="model-y", purpose="reply",
                 kind="completion") == 3 + 6 + 4  # the answers' words
    assert value(samples, "kuuki_llm_tokens_total", model="model-y", purpose="reply",
                 kind="prompt") == prompt_tokens(llm, "reply")
    assert value(samples, "kuuki_guard_verdicts_total", verdict="ok") == 3
    # on the replay's clock no time passes while the model writes: three replies, 0 s each
    assert value(samples, "kuuki_reply_latency_seconds_count") == 3
    assert value(samples, "kuuki_reply_latency_seconds_sum") == 0
