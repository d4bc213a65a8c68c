"""A reply that opens with the prompt's own scaffolding ("Based on the above, I would say
that…", the shipped model's habit) is an echo: the guard knows the lead-ins of the prompts
in effect (a user's copies too), and a reply that talks about its prompt as a text."""

from __future__ import annotations

from pathlib import Path

import pytest

from kuuki.app import reply_guard
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


def test_the_shipped_reply_prompts_lead_in_is_known_to_the_guard() -> None:
    """The shipped reply prompt ends "Based on the above, reply … as Kuu": its lead-in is
    one the guard derives (a reply opening with it is caught by the derivation, not only
    by the words about a prompt)."""
    from kuuki.guard.scaffold import Scaffold

    scaffold = Scaffold.from_prompts(Prompts("en"))
    assert ("based", "on", "the", "above") in scaffold.openers
    assert "上記の情報をもとに" in scaffold.ja_openers
