"""`kuuki stats` on a store filled by replaying a known transcript (SQLite and PostgreSQL).

What the transcript makes the bot do (each decision is printed by `kuuki replay`):

- 2025-12-20, #general: o1 silent; o2 "Kuu, are you there?" → reply (name). Outside 7d.
- 2026-01-05, #general: g1 silent; g2 "Kuu, any idea…" → reply (name, model big);
  g3 silent; g4 "Kuu, please be quiet…" → reaction (name, the quiet request); g5, g6
  silent, "asked to be quiet here".
- 2026-01-05, a DM with dave: d1 → ack (dm, model big).
- 2026-01-05, #dev: v1 "@Kuu …" → the reply is empty twice (two guard rejections) → the
  fallback, a reaction (mention).
- 2026-01-06, #dev: v2, v3, v4, erin's questions to the room, erin alone in the channel
  (its only other member spoke the day before): v2 is left for the re-check (a member who
  never spoke in a lone person's talk lets a room question wait); v3 and v4 name the
  persona's keyword "async", which puts them in the unclear band: v3 goes to the judge
  (model small, answer unusable: a guard rejection); v4 finds the judge budget (1) spent →
  silent; three minutes after v2, its re-check replies (unasked, model big: a deliberate
  wait of 180 s, kept out of the latency, which measures answers to messages that
  addressed the bot).
"""

from __future__ import annotations

import asyncio
import io
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kuuki.app import build_app
from kuuki.cli import main
from kuuki.clock import VirtualClock
from kuuki.domain import Action, Decision, DecisionTrace, Stage, User
from kuuki.errors import KuukiError
from kuuki.explain.stats import DecisionFacts, Folder
from kuuki.explain.stats_cli import run_stats
from kuuki.explain.stats_read import find_channel
from kuuki.explain.window import parse_span
from kuuki.replay.runner import RecordingOutbox, replay
from kuuki.replay.transcript import apply_setup, read_transcript
from kuuki.settings import Settings, load_settings
from kuuki.store import Store
from kuuki.testing.llm import ScriptedLLM

LINES = [
    {"setup": {"bot": "Kuu", "language": "en"}},
    {"id": "o1", "t": "2025-12-20T09:00:00+00:00", "channel": "general", "user": "alice",
     "text": "morning"},
    {"id": "o2", "t": "2025-12-20T09:01:00+00:00", "channel": "general", "user": "carol",
     "text": "Kuu, are you there?"},
    {"id": "g1", "t": "2026-01-05T10:00:00+00:00", "channel": "general", "user": "alice",
     "text": "hi all"},
    {"id": "g2", "t": "2026-01-05T10:00:30+00:00", "channel": "general", "user": "carol",
     "text": "Kuu, any idea where to eat tonight?"},
    {"id": "g3", "t": "2026-01-05T10:01:30+00:00", "channel": "general", "user": "bob",
     "text": "thanks everyone"},
    {"id": "d1", "t": "2026-01-05T10:02:00+00:00", "channel": "dm-dave",
     "channel_visibility": "dm", "user": "dave", "text": "hello, secret plans here"},
    {"id": "v1", "t": "2026-01-05T10:03:00+00:00", "channel": "dev", "user": "bob",
     "text": "@Kuu what is rust?", "mentions": ["Kuu"]},
    {"id": "g4", "t": "2026-01-05T10:05:00+00:00", "channel": "general", "user": "alice",
     "text": "Kuu, please be quiet for 30 minutes"},
    {"id": "g5", "t": "2026-01-05T10:06:00+00:00", "channel": "general", "user": "bob",
     "text": "does anyone know a good ramen place near the station?"},
    {"id": "g6", "t": "2026-01-05T10:07:00+00:00", "channel": "general", "user": "carol",
     "text": "I think there is one, what do you all think about the new menu there?"},
    {"id": "v2", "t": "2026-01-06T09:00:00+00:00", "channel": "dev", "user": "erin",
     "text": "is anyone around to help me with a rust question about lifetimes?"},
    {"id": "v3", "t": "2026-01-06T09:01:00+00:00", "channel": "dev", "user": "erin",
     "text": "does anyone know how borrow checking works with async code?"},
    {"id": "v4", "t": "2026-01-06T09:02:00+00:00", "channel": "dev", "user": "erin",
     "text": "does anyone have a good book for learning async rust quickly?"},
]
# Reply and ack texts in the order the bot asks: o2, g2, d1 (ack), v1 and its retry
# (empty: rejected twice), v2's re-check.
ANSWERS = ("hello carol", "try the noodle bar on 5th", "hi dave", "", "",
           "lifetimes tie a borrow to its owner")
NOW = datetime(2026, 1, 6, 12, 0, tzinfo=UTC)


async def fill(
    tmp_path: Path, store_url: str, fail_sends: Exception | None = None
) -> dict[str, ScriptedLLM]:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES), encoding="utf-8")
    transcript = read_transcript(path)
    settings = apply_setup(Settings(), transcript)
    settings = replace(settings, judge_call_budget=1,
                       persona=replace(settings.persona, keywords=("async",)))
    clock = VirtualClock(transcript.events[0].at)
    bot = User("Kuu", "Kuu", is_bot=True)
    big = ScriptedLLM(*ANSWERS, queue_for=("reply", "ack"), name="big")
    small = ScriptedLLM(name="small")
    outbox = RecordingOutbox(clock, bot, fail_with=fail_sends)
    app = await build_app(settings, clock=clock, outbox=outbox, llm=big, judge_llm=small,
                          store=store_url)
    try:
        await replay(app.engine, clock, transcript)
    finally:
        await app.close()
    return {"big": big, "small": small}


async def stats(store_url: str, span: str = "7d", channel: str | None = None, *,
                as_json: bool = True, now: datetime = NOW) -> Any:
    settings = load_settings(overrides={"KUUKI_LLM_PRICE_PER_1K": "big=2"})
    out = io.StringIO()
    assert await run_stats(settings, parse_span(span), span, channel, as_json, out, now,
                           store_url) == 0
    return json.loads(out.getvalue()) if as_json else out.getvalue()


def row(cid: str, name: str, visibility: str, **figures: Any) -> dict[str, Any]:
    """A channel's JSON with every figure zero unless given."""
    base: dict[str, Any] = {
        "id": cid, "name": name, "visibility": visibility, "messages": 0, "bot_messages": 0,
        "share": None, "replies": 0, "acks": 0, "reactions": 0, "asked": 0, "asked_by": {},
        "unasked": 0, "llm_calls": 0, "tokens": 0,
        "latency": {"count": 0, "p50_ms": None, "p95_ms": None},
        "waited": {"count": 0, "p50_ms": None, "p95_ms": None},
        "guard_rejections": 0, "fallbacks": 0, "silences": {"budget": 0, "quiet": 0},
        "would_have": {"replies": 0, "acks": 0, "reactions": 0},
    }
    return base | figures


def lat(count: int, p50: float | None, p95: float | None) -> dict[str, Any]:
    return {"count": count, "p50_ms": p50, "p95_ms": p95}


GENERAL = row("general", "general", "public", messages=7, bot_messages=1, share=0.1429,
              replies=1, reactions=1, asked=2, asked_by={"name": 2}, llm_calls=1,
              tokens=202 + 6, latency=lat(1, 0.0, 0.0), silences={"budget": 0, "quiet": 2})
DEV = row("dev", "dev", "public", messages=5, bot_messages=1, share=0.2, replies=1,
          reactions=1, asked=1, asked_by={"mention": 1}, unasked=1, llm_calls=4,
          tokens=206 + 49 + 306 + 8 + 236 + 7, waited=lat(1, 180_000.0, 180_000.0),
          guard_rejections=3, fallbacks=1, silences={"budget": 1, "quiet": 0})
DMS = row("dm", "direct messages", "dm", messages=2, bot_messages=1, share=0.5, acks=1,
          asked=1, asked_by={"dm": 1}, llm_calls=1, tokens=114 + 2,
          latency=lat(1, 0.0, 0.0)) | {"conversations": 1}
TOTAL = row("*", "all channels", "", messages=14, bot_messages=3, share=0.2143, replies=2,
            acks=1, reactions=2, asked=4, asked_by={"dm": 1, "mention": 1, "name": 2},
            unasked=1, llm_calls=6, tokens=208 + 812 + 116, latency=lat(2, 0.0, 0.0),
            waited=lat(1, 180_000.0, 180_000.0),
            guard_rejections=3, fallbacks=1, silences={"budget": 1, "quiet": 2})


async def test_json_counts_what_the_transcript_made_the_bot_do(
    tmp_path: Path, store_url: str
) -> None:
    llms = await fill(tmp_path, store_url)
    got = await stats(store_url)
    assert got["window"] == {"since": "2025-12-30T12:00:00+00:00",
                             "until": "2026-01-06T12:00:00+00:00", "span": "7d"}
    assert got["channels"] == [GENERAL, DEV]
    assert got["dms"] == DMS
    assert got["total"] == TOTAL
    assert got["models"] == [
        {"model": "big", "calls": 5, "errors": 0, "prompt_tokens": 202 + 114 + 206 + 49 + 236,
         "completion_tokens": 6 + 2 + 0 + 0 + 7, "tokens": 822, "cost": 1.644},
        {"model": "small", "calls": 1, "errors": 0, "prompt_tokens": 306,
         "completion_tokens": 8, "tokens": 314, "cost": None},
    ]
    assert got["cost"] == 1.644
    # The models' own record agrees: big answered o2 (outside the window) and five more;
    # its memory summaries keep no decision trace, so they are not counted.
    spoken = [c.purpose for c in llms["big"].history if not c.purpose.startswith("memory")]
    assert spoken == ["reply", "reply", "ack", "reply", "reply-retry", "reply"]
    assert [c.purpose for c in llms["small"].history] == ["judge"]
    assert got["series"] == {
        "channels": [
            {"day": "2026-01-05", "channel": "dev", "name": "dev", "messages": 1,
             "bot_messages": 0, "reactions": 1},
            {"day": "2026-01-05", "channel": "dm", "name": "direct messages", "messages": 2,
             "bot_messages": 1, "reactions": 0},
            {"day": "2026-01-05", "channel": "general", "name": "general", "messages": 7,
             "bot_messages": 1, "reactions": 1},
            {"day": "2026-01-06", "channel": "dev", "name": "dev", "messages": 4,
             "bot_messages": 1, "reactions": 0},
        ],
        "models": [
            {"day": "2026-01-05", "model": "big", "calls": 4, "tokens": 208 + 116 + 206 + 49},
            {"day": "2026-01-06", "model": "big", "calls": 1, "tokens": 243},
            {"day": "2026-01-06", "model": "small", "calls": 1, "tokens": 314},
        ],
        "latency": [
            {"day": "2026-01-05", "count": 2, "p50_ms": 0.0, "p95_ms": 0.0},
        ],
    }
    text = json.dumps(got)
    assert "dave" not in text and "secret" not in text


async def test_text_is_aligned_names_channels_and_never_a_dm(
    tmp_path: Path, store_url: str
) -> None:
    await fill(tmp_path, store_url)
    out = await stats(store_url, as_json=False)
    assert out.splitlines() == [
        "kuuki stats, last 7d (2025-12-30 12:00 → 2026-01-06 12:00 UTC)",
        "",
        "channel              messages  bot  share  replies  acks  reactions  asked  unasked",
        "#general                    7    1   14 %        1     0          1      2        0",
        "#dev                        5    1   20 %        1     0          1      1        1",
        "direct messages (1)         2    1   50 %        0     1          0      1        0",
        "all channels               14    3   21 %        2     1          2      4        1",
        "",
        "channel              latency p50    p95  guard rejections  fallbacks  "
        "silent: budget  quiet",
        "#general                   0.0 s  0.0 s                 0          0"
        "               0      2",
        "#dev                           -      -                 3          1"
        "               1      0",
        "direct messages (1)        0.0 s  0.0 s                 0          0"
        "               0      0",
        "all channels               0.0 s  0.0 s                 3          1"
        "               1      2",
        "",
        "latency: from a message that addressed the bot to its answer",
        "waited on purpose: 1 reply after a deliberate wait (12–30 s for a burst to settle, "
        "3 min before taking up an open question), median 3 min; kept out of the latency",
        "",
        "asked by: dm 1, mention 1, name 2",
        "",
        "model  calls  errors  prompt tokens  completion tokens    cost",
        "big        5       0            807                 15  1.6440",
        "small      1       0            306                  8       -",
    ]


async def test_since_leaves_out_what_came_before(tmp_path: Path, store_url: str) -> None:
    await fill(tmp_path, store_url)
    got = await stats(store_url, "30m", now=datetime(2026, 1, 6, 9, 10, tzinfo=UTC))
    dev = row("dev", "dev", "public", messages=4, bot_messages=1, share=0.25, replies=1,
              unasked=1, llm_calls=2, tokens=306 + 8 + 236 + 7,
              waited=lat(1, 180_000.0, 180_000.0), guard_rejections=1,
              silences={"budget": 1, "quiet": 0})
    assert got["channels"] == [dev]
    assert got["dms"] == row("dm", "direct messages", "dm") | {"conversations": 0}
    assert [m["model"] for m in got["models"]] == ["big", "small"]
    # 52 weeks back from the same moment takes in December's o2 and its reply too.
    year = await stats(store_url, "52w", now=NOW)
    assert year["total"]["messages"] == 14 + 3 and year["total"]["replies"] == 3


async def test_channel_by_name_or_id_and_an_unknown_one(
    tmp_path: Path, store_url: str
) -> None:
    await fill(tmp_path, store_url)
    by_name = await stats(store_url, channel="#general")
    assert by_name["channels"] == [GENERAL]
    assert by_name["total"] == TOTAL | {k: v for k, v in GENERAL.items()
                                        if k not in ("id", "name", "visibility")}
    assert (await stats(store_url, channel="dev"))["channels"] == [DEV]
    # A DM asked for by its id (here the transcript's channel name is its id) is counted
    # as the DMs are, without its name
    dm = await stats(store_url, channel="dm-dave", as_json=False)
    assert "direct messages (1)         2    1   50 %        0     1" in dm
    assert "dave" not in dm.replace("dm-dave", "") and "#" not in dm
    settings = load_settings()
    with pytest.raises(KuukiError, match=r"^--channel 'random': no channel with that name "
                       r"or id in .*; `kuuki stats` without --channel lists") as err:
        await run_stats(settings, timedelta(days=7), "7d", "random", False, io.StringIO(), NOW,
                        store_url)
    assert "general" not in str(err.value) and "dev" not in str(err.value)


def test_bad_flags_are_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for bad in ("5x", "0d", "7", "-1d", "d", "9999w"):
        with pytest.raises(SystemExit) as exit:
            main(["stats", "--since", bad, "--store", str(tmp_path / "s.db")])
        assert exit.value.code == 2
        assert "argument --since: " in capsys.readouterr().err
    assert main(["stats", "--store", str(tmp_path / "none.db")]) == 2
    assert f"no store at {tmp_path}/none.db (--store)" in capsys.readouterr().err


def test_an_empty_store_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def create() -> None:
        await (await Store.open(f"sqlite:///{tmp_path}/s.db")).close()

    asyncio.run(create())
    assert main(["stats", "--store", str(tmp_path / "s.db")]) == 0
    assert capsys.readouterr().out.endswith("\n\nnothing was recorded in this window\n")
    assert main(["stats", "--json", "--since", "2w", "--store", str(tmp_path / "s.db")]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["channels"] == [] and got["models"] == [] and got["cost"] is None
    assert got["total"] == row("*", "all channels", "") and got["window"]["span"] == "2w"
    assert main(["stats", "--channel", "general", "--store", str(tmp_path / "s.db")]) == 2
    assert "--channel 'general': no channel with that name or id" in capsys.readouterr().err


async def test_what_failed_to_send_was_not_said(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path}/down.db"
    await fill(tmp_path, store_url, fail_sends=ConnectionError("the platform is down"))
    got = await stats(store_url)
    async with await Store.open(store_url) as store:
        stored = [await store.browse.decision_for(m) for m in ("g2", "d1")]
    # The bot decided to speak (the rows say reply, ack…) but nothing reached the channel:
    # no reply, ack or reaction counted, no message of the bot's, no latency
    assert [d["action"] if d else None for d in stored] == ["reply", "ack"]
    total = got["total"]
    assert total["messages"] == 11 and total["bot_messages"] == 0 and total["share"] == 0.0
    assert (total["replies"], total["acks"], total["reactions"]) == (0, 0, 0)
    assert total["asked"] == 0 and total["unasked"] == 0
    assert total["latency"] == lat(0, None, None)
    assert total["llm_calls"] > 0


def test_a_skipped_call_no_call_a_negative_wait_none_and_a_dm_not_found_by_name() -> None:
    def call(outcome: str) -> dict[str, Any]:
        return {"model": "big", "purpose": "judge", "outcome": outcome, "prompt_tokens": 10,
                "completion_tokens": 2}

    folder = Folder({"c1": ("general", "public")}, {"*": 1.0})
    trace = {"llm_calls": [call("skipped"), call("timeout"), call("ok")]}
    folder.decisions([DecisionFacts("c1", "none", "llm", "score 40", NOW, trace)])
    got = folder.result(NOW - timedelta(days=1), NOW)
    (model,) = got.models
    assert (model.calls, model.errors, model.tokens, model.cost) == (2, 1, 24, 0.024)
    assert got.total.llm_calls == 2
    # a platform's clock a second ahead of ours: no negative wait
    asked = {"features": {"addressed": "name", "pass": "first"}}
    folder.decisions([DecisionFacts("c1", "reply", "addressed", "addressed by name", NOW, asked,
                                    NOW + timedelta(seconds=1))])
    assert folder.result(NOW - timedelta(days=1), NOW).total.latency.p50_ms == 0.0
    channels = {"C1": ("general", "public"), "D1": ("dave", "dm")}
    assert [find_channel(channels, w) for w in ("general", "#general", "C1", "D1", "dave")] == [
        "C1", "C1", "C1", "D1", None]


async def test_a_fallback_to_silence_without_a_model_call_is_counted(tmp_path: Path) -> None:
    """The breaker was open: no call was made, the unasked reply became silence."""
    url = f"sqlite:///{tmp_path}/s.db"
    at = NOW - timedelta(hours=1)
    reason = "score 75 → reply model unavailable: stayed silent"
    decision = Decision("m1", "c1", Action.none("c1", "m1"), Stage.LOCAL, 75.0, reason, at,
                        DecisionTrace("m1", "c1", at))
    async with await Store.open(url) as store:
        await store.messages.save_decisions([decision])
    got = await stats(url)
    assert got["total"]["fallbacks"] == 1 and got["total"]["replies"] == 0


async def test_a_window_that_misses_the_data_says_where_it_is_and_how_to_reach_it(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A replayed store is dated where its transcript says: months later, the default
    window holds nothing, and the report says so, where the data is, and which --since
    reaches it; years are a span too."""
    await fill(tmp_path, store_url)
    later = datetime(2026, 11, 27, 22, 0, tzinfo=UTC)
    text = await stats(store_url, as_json=False, now=later)
    assert text.splitlines()[-1] == ("nothing in the last 7 days; the store holds data from "
                                     "2025-12-20 to 2026-01-06 — try --since 1y")
    got = await stats(store_url, now=later)
    assert got["data"] == {"first": "2025-12-20T09:00:00+00:00",
                           "last": "2026-01-06T09:03:00+00:00"}
    assert got["hint"].endswith("— try --since 1y")
    reached = await stats(store_url, "1y", now=later)
    assert reached["total"]["messages"] == 17 and reached["hint"] is None
    assert (await stats(store_url, "2y", now=later))["total"]["messages"] == 17
    early = await stats(store_url, "7d", now=datetime(2025, 6, 1, tzinfo=UTC))
    assert "after this window's end" in early["hint"]


def test_years_are_a_span_and_the_suggestion_is_round() -> None:
    from kuuki.explain.window import suggest_span

    assert parse_span("2y") == timedelta(days=730)
    with pytest.raises(ValueError, match="more than 10 years"):
        parse_span("11y")
    at = datetime(2026, 11, 27, tzinfo=UTC)
    assert [suggest_span(at - timedelta(days=d), at) for d in (3, 20, 200, 800)] == [
        "3d", "3w", "1y", "3y"]


async def test_a_day_is_counted_per_hour(tmp_path: Path, store_url: str) -> None:
    """The dashboard's day view: messages per hour, not two points a day."""
    from kuuki.explain.stats_read import read_stats

    await fill(tmp_path, store_url)
    async with await Store.open(store_url) as store:
        got = await read_stats(store, datetime(2026, 1, 5, 9, 0, tzinfo=UTC),
                               datetime(2026, 1, 6, 8, 0, tzinfo=UTC), hourly=True)
    assert got.hourly
    hours = sorted({d.at for d in got.channel_days})
    assert hours == [datetime(2026, 1, 5, 10, 0, tzinfo=UTC)]  # all of Jan 5th's talk
    assert sum(d.messages for d in got.channel_days) == 10
    assert all(d.at.minute == 0 and d.at.second == 0 for d in got.model_days)


def test_listening_only_counts_what_the_bot_would_have_done_beside_what_it_did() -> None:
    from kuuki.explain.stats_cli import stats_json, stats_text

    folder = Folder({"c1": ("support", "public"), "c2": ("random", "public")}, {})
    shadow = {"features": {"shadow": True, "addressed": "mention", "pass": "first"}}
    sent = {"features": {"addressed": "mention", "pass": "first"}}
    folder.decisions([
        DecisionFacts("c1", "reply", "addressed", "mention", NOW, shadow, NOW),
        DecisionFacts("c1", "react", "local", "score 85", NOW, shadow, NOW),
        DecisionFacts("c2", "reply", "addressed", "mention", NOW, sent, NOW),
    ])
    got = folder.result(NOW - timedelta(days=1), NOW)
    support = next(c for c in got.channels if c.name == "support")
    assert (support.replies, support.reactions, support.latency.count) == (0, 0, 0)
    assert (support.would_replies, support.would_acks, support.would_reactions) == (1, 0, 1)
    assert (got.total.replies, got.total.would) == (1, 2)
    assert stats_json(got, "1d")["total"]["would_have"] == {
        "replies": 1, "acks": 0, "reactions": 1}
    text = stats_text(got, "1d").splitlines()
    header = next(i for i, ln in enumerate(text) if ln.startswith("listening only"))
    assert text[header].split() == ["listening", "only", "did:", "replies", "acks", "reactions",
                                    "would", "have:", "replies", "acks", "reactions"]
    rows = {ln.split()[0]: ln.split()[1:] for ln in text[header + 1:header + 5] if ln.strip()}
    assert rows["#support"] == ["0", "0", "0", "1", "0", "1"]
    assert rows["#random"] == ["1", "0", "0", "0", "0", "0"]
