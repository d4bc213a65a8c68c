"""Language per conversation: detected from the messages, the persona's only the default."""

from __future__ import annotations

import pytest

from kuuki.settings import Persona
from kuuki.text.language import conversation_language, detect, dominant


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("おすすめのラーメン屋ある？", "ja"),
        ("了解", "ja"),
        ("`pip install kuuki` でいける？", "ja"),
        ("Pythonの公式チュートリアルがいいよ", "ja"),
        ("what's a good way to learn Rust?", "en"),
        ("see https://example.jp/ラーメン for the menu", "en"),
        ("ok", None),
        ("🍜👍", None),
        ("？", None),
    ],
)
def test_detect(text: str, lang: str | None) -> None:
    assert detect(text) == lang


def test_the_trigger_decides_then_the_conversation_then_the_default() -> None:
    assert conversation_language("Kuu, any idea?", ["ねえ", "どうしよう"], "ja") == "en"
    assert conversation_language("👍", ["ねえ", "どうしよう"], "en") == "ja"
    assert conversation_language("👍", ["ok", "!"], "ja") == "ja"
    # Too short to tell, and nothing else to go by: a hint beats the persona's default.
    assert conversation_language("@Kuu hi", ["@Kuu hi"], "ja") == "en"
    assert conversation_language("hi", ["今日どこ行く？", "hi"], "en") == "ja"


def test_a_one_word_aside_does_not_flip_a_conversation() -> None:
    texts = ["今日どこ行く？", "駅前のカフェは？", "いいね、10時に集合で", "lol"]
    assert dominant(texts, "en") == "ja"


def test_persona_language_defaults_from_its_names() -> None:
    assert Persona().default_language == "ja"  # aliases くう/クウ
    assert Persona(aliases=("kuu",)).default_language == "en"
    assert Persona(language="en").default_language == "en"
    assert Persona(language="en").prompt_for("ja").startswith("あなたは「Kuu」")
    own = Persona(system_prompt="You are {name}.")
    assert own.prompt_for("ja") == own.prompt_for("en") == "You are Kuu."
