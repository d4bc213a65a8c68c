"""A reply that opens with the prompt's own scaffolding ("Based on the above, I would say
that…", the shipped model's habit) is an echo: the guard knows the lead-ins of the prompts
in effect (a user's copies too), and a reply that talks about its prompt as a text."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from kuuki.app import reply_guard
from kuuki.domain import Channel, Message, User
from kuuki.guard.reply import Expect, ReplyGuard
from kuuki.prompts import Prompts
from kuuki.settings import Settings

EN = Expect("en", ["Kuu, when does the last bus leave?"], ["alice"])
JA = Expect("ja", ["くう、おすすめのラーメン屋ある？"], ["suzuki"])


@pytest.fixture(scope="module")
def guard() -> ReplyGuard:
    return reply_guard(Settings(), Prompts("en"))


@pytest.mark.parametrize("text", [
    "Based on the above, I would say that the last bus leaves at 23:40.",
    "Based on the above conversation, the bus leaves at 23:40.",
    "According to the information above, the last bus leaves at 23:40.",
    "Given the context provided, I think the bus leaves at 23:40.",
    "Answer in JSON only, the bus leaves at 23:40.",
])
def test_an_english_echo_of_the_scaffolding_is_rejected(guard: ReplyGuard, text: str) -> None:
    verdict = guard.check(text, EN)
    assert (verdict.ok, verdict.check) == (False, "echo"), verdict


def test_a_japanese_echo_of_the_scaffolding_is_rejected(guard: ReplyGuard) -> None:
    for text in ("上記の情報をもとに、駅前の店がおすすめです。", "上記の会話を分析し、駅前の店がいいと思います。"):
        verdict = guard.check(text, JA)
        assert (verdict.ok, verdict.check) == (False, "echo"), verdict


@pytest.mark.parametrize("text", [
    "Based on what you said, the last bus leaves at 23:40.",
    "The last bus leaves at 23:40, I think.",
    "From the station, the last bus leaves at 23:40.",
    "Is someone stuck at the station? The last bus leaves at 23:40.",
])
def test_a_reply_that_only_sounds_alike_passes(guard: ReplyGuard, text: str) -> None:
    assert guard.check(text, EN).ok


def test_the_lead_ins_come_from_the_prompts_in_effect(tmp_path: Path) -> None:
    """A user's own wording is guarded like ours: their reply prompt's lead-in, echoed,
    is rejected; with the shipped prompts the same reply is fine."""
    own = tmp_path / "prompts" / "en"
    own.mkdir(parents=True)
    (own / "reply.j2").write_text(
        '{% include "context.j2" %}\n\nTaking everything into account, reply as '
        "{{ persona_name }} in one or two sentences.\n", encoding="utf-8")
    text = "Taking everything into account, I would take the 23:40 bus."
    users = reply_guard(Settings(), Prompts("en", tmp_path / "prompts"))
    verdict = users.check(text, EN)
    assert (verdict.ok, verdict.check) == (False, "echo")
    assert verdict.reason == "opens with the prompt's words “taking everything into account”"
    assert reply_guard(Settings(), Prompts("en")).check(text, EN).ok


def test_the_shipped_reply_prompts_do_not_invite_the_echo() -> None:
    """The reply and ack prompts end in an instruction with no lead-in to echo."""
    prompts = Prompts("en")
    t = Message("m1", "c1", User("u1", "alice"), "Kuu, when does the last bus leave?",
                datetime(2026, 1, 5, 10, 0, tzinfo=UTC))
    for lang in ("en", "ja"):
        for name in ("reply", "ack"):
            rendered = prompts.render(
                name, language=lang, persona_name="Kuu", persona_prompt="", channel=Channel(
                    "c1", "general"), conversation=[t], other_messages=[], now=t.ts,
                speaker="alice", compact=False, kind=name, channels=[],
                workspace_long_term="", workspace_short_term="", thread_memories={},
                channel_context=None, user_profile=None, facts=[])
            last = rendered.strip().splitlines()[-1]
            assert not last.startswith(("Based on the above", "上記の情報をもとに")), last
