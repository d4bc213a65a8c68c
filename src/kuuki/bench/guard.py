"""`kuuki bench reply`: what a person waits for, and what they get, with a real model.

40 messages that address the bot (20 English, 20 Japanese; `guard_messages.jsonl`), each
after a line or two of context in its own channel, go through the whole engine on the
real clock, one after another, with the configured model (by default the shipped
SmolLM2-135M, loaded and warmed before the first). For each: the time from handing the
message to the engine to the moment the reply (or the fallback reaction) is sent, and
what was sent. Every posted text is run through the guard once more: the number it
would reject must be 0. The share of messages that got a real reply, not the fallback,
is the figure that says how good the model is; the guard makes sure it is never junk.
With `--busy` each message arrives half a second after a summary-sized memory call started
on the same model: the reply must not wait for it (kuuki.llm.scheduler).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, TextIO

from kuuki.clock import RealClock
from kuuki.domain import Action, ActionKind, Channel, ChatEvent, Decision, EventKind, Message, User
from kuuki.guard.reply import Expect
from kuuki.llm.base import ChatMessage
from kuuki.settings import Settings


@dataclass(frozen=True, slots=True)
class GuardCase:
    lang: str
    context: tuple[tuple[str, str], ...]
    user: str
    text: str


def load_cases() -> list[GuardCase]:
    raw = resources.files("kuuki.bench").joinpath("guard_messages.jsonl").read_text("utf-8")
    cases = []
    for line in raw.splitlines():
        if line.strip():
            d = json.loads(line)
            cases.append(GuardCase(d["lang"], tuple(tuple(c) for c in d["context"]), d["user"],
                              d["text"]))
    return cases


@dataclass(slots=True)
class TimedOutbox:
    """Records when each action was sent, by the message it answers."""

    clock: RealClock
    bot: User
    sent_at: dict[str, float] = field(default_factory=dict)
    actions: dict[str, Action] = field(default_factory=dict)
    _n: int = 0

    async def send(self, channel: Channel, action: Action) -> Message | None:
        target = action.target_message_id or ""
        self.sent_at.setdefault(target, time.perf_counter())
        self.actions.setdefault(target, action)
        if action.kind in (ActionKind.REPLY, ActionKind.ACK):
            self._n += 1
            return Message(f"bot-{self._n}", channel.id, self.bot, action.text or "",
                           self.clock.now(), reply_to=action.reply_to)
        return None

    def typing(self, channel: Channel) -> Any:
        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def nothing() -> Any:
            yield

        return nothing()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


_BUSY_PROMPT = [
    ChatMessage("system", "You keep notes about a chat channel. " * 40),
    ChatMessage("user", "Write the channel's summary, history and recent events in detail."),
]


async def _busy(app: Any) -> None:
    """A memory call of the kind a summary makes, on the same model (for --busy)."""
    from kuuki.llm.record import call_llm

    if app.llm is not None:
        await call_llm(app.llm, None, "memory_summary", _BUSY_PROMPT, max_tokens=400,
                       temperature=0.2)


async def bench_reply(
    settings: Settings, *, limit: int | None = None, busy: bool = False
) -> dict[str, Any]:
    from kuuki.app import build_app

    cases = load_cases()[:limit]
    clock = RealClock()
    bot = User(settings.persona.name, settings.persona.name, is_bot=True)
    outbox = TimedOutbox(clock, bot)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kuuki-bench-reply-") as tmp:
        app = await build_app(settings, clock=clock, outbox=outbox,
                              store=f"sqlite:///{tmp}/bench.sqlite3")
        decided: dict[str, Decision] = {}

        def on_decision(d: Decision) -> None:
            decided.setdefault(d.message_id, d)

        app.engine.on_decision(on_decision)
        try:
            load_started = time.perf_counter()
            await app.warm()
            load_s = time.perf_counter() - load_started
            await _warm_up(app, clock)
            guard = app.responder.guard
            for i, case in enumerate(cases):
                background = None
                if busy:  # a mention that arrives while a summary is being written
                    background = asyncio.ensure_future(_busy(app))
                    await asyncio.sleep(0.5)
                results.append(await _one(app, clock, outbox, decided, guard, i, case))
                if background is not None:
                    await background
        finally:
            await app.close()
    report = _summary(results, settings, load_s)
    report["busy"] = busy
    return report


async def _warm_up(app: Any, clock: RealClock) -> None:
    """One reply before measuring: the first generation pays for caches and pages."""
    ch = Channel("warm-up", "warm-up")
    m = Message("warm-1", ch.id, User("w", "w"), "Kuu, hello!", clock.now())
    await app.engine.handle(ChatEvent(EventKind.POSTED, ch, m.id, m.ts, message=m))
    await app.engine.idle()


async def _one(
    app: Any, clock: RealClock, outbox: TimedOutbox, decided: dict[str, Decision], guard: Any,
    i: int, case: GuardCase,
) -> dict[str, Any]:
    ch = Channel(f"bench-{i}", f"bench-{i}")
    history = []
    for j, (user, text) in enumerate(case.context):
        m = Message(f"c{i}-{j}", ch.id, User(user, user), text, clock.now())
        history.append(m)
        await app.engine.handle(ChatEvent(EventKind.POSTED, ch, m.id, m.ts, message=m))
    mid = f"q{i}"
    msg = Message(mid, ch.id, User(case.user, case.user), case.text, clock.now())
    started = time.perf_counter()
    await app.engine.handle(ChatEvent(EventKind.POSTED, ch, mid, msg.ts, message=msg))
    while mid not in decided:
        await asyncio.sleep(0.01)
    d = decided[mid]
    latency = outbox.sent_at.get(mid, time.perf_counter()) - started
    action = outbox.actions.get(mid, d.action)
    rejected_again = None
    if action.text:
        expect = Expect(case.lang, [m.text for m in history] + [case.text],
                        [m.user.name for m in history] + [case.user])
        verdict = guard.check(action.text, expect)
        rejected_again = None if verdict.ok else verdict.reason
    return {
        "lang": case.lang,
        "message": case.text,
        "action": action.kind.value,
        "text": action.text,
        "emoji": action.emoji,
        "latency_s": round(latency, 3),
        "reason": d.reason,
        "guard": [f"{g.subject}: {g.check or 'ok'} {g.reason}".strip() for g in d.trace.guard],
        "llm_calls": [(c.purpose, c.outcome, round(c.latency_ms)) for c in d.trace.llm_calls],
        "posted_but_rejected": rejected_again,
    }


def _summary(results: list[dict[str, Any]], settings: Settings, load_s: float) -> dict[str, Any]:
    lat = [r["latency_s"] for r in results]
    real = [r for r in results if r["action"] in ("reply", "ack") and r["text"]]
    by_lang = {
        lang: f"{sum(1 for r in real if r['lang'] == lang)}/"
        f"{sum(1 for r in results if r['lang'] == lang)}"
        for lang in ("en", "ja")
    }
    retried = sum(1 for r in results if any("retry" in g for g in r["guard"]))
    return {
        "benchmark": "reply",
        "model": settings.llm.model_path or settings.llm.model or settings.llm.backend,
        "messages": len(results),
        "model_load_s": round(load_s, 2),
        "latency_p50_s": round(statistics.median(lat), 2) if lat else None,
        "latency_p95_s": round(_pct(lat, 0.95), 2) if lat else None,
        "latency_max_s": round(max(lat), 2) if lat else None,
        "real_replies": len(real),
        "real_reply_share": round(len(real) / len(results), 3) if results else None,
        "real_replies_by_language": by_lang,
        "fallbacks": sum(1 for r in results if r["action"] == "react"),
        "retried": retried,
        "posted_texts_the_guard_rejects": sum(1 for r in results if r["posted_but_rejected"]),
        "results": results,
    }


def print_report(result: dict[str, Any], out: TextIO, *, details: bool = False) -> None:
    shown = dict(result) if details else {k: v for k, v in result.items() if k != "results"}
    out.write(json.dumps(shown, ensure_ascii=False, indent=None if not details else 1) + "\n")
