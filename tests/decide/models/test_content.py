"""What was said, read by the addressee and seat models: n-grams that need no spaces, the
candidate's question several turns up, their topic, a request, thanks for an answer."""

from __future__ import annotations

from pathlib import Path

from kuuki.decide.models.addressee import AddresseeModel
from kuuki.decide.models.content import (
    CONTENT_FEATURES,
    ContentCache,
    TurnText,
    content_rows,
    ngrams,
    rarity_table,
)
from kuuki.decide.models.cues import CueCache
from kuuki.decide.models.features import Context
from kuuki.decide.models.turns import Turn

F = {n: k for k, n in enumerate(CONTENT_FEATURES)}


def rows(turns: list[Turn], keys: list[str]) -> dict[str, dict[str, float]]:
    names = {t.speaker: [t.speaker] for t in turns}
    ctx = Context(turns, len(turns) - 1, 20, CueCache(), names)
    x = content_rows(ctx, keys, ContentCache())
    return {k: dict(zip(CONTENT_FEATURES, x[r].tolist(), strict=True))
            for r, k in enumerate(keys)}


def test_n_grams_need_no_spaces_and_read_kana_alike() -> None:
    assert {"花粉", "粉や", "花粉や"} <= ngrams("花粉やばいですけどね！")
    assert "ばい" in ngrams("花粉はヤバいです") and "ばい" in ngrams("花粉やばい")
    assert ngrams("The WiFi driver, again") == {"the", "wifi", "driver", "again"}
    same = TurnText("確かに、花粉はヤバいです・・・", None)
    assert same.similarity(TurnText("花粉やばいですけどね！", None)) > 0.2
    assert same.similarity(TurnText("週末は山に登りました", None)) < 0.1


def test_rare_n_grams_weigh_more_than_common_ones() -> None:
    rarity = rarity_table(["いいですね", "そうですね", "ですね！", "花粉がつらい", "いいですね"])
    a = TurnText("花粉ですね", rarity)
    assert a.squares["花粉"] > a.squares["です"]  # weights squared: the order is theirs


def test_an_answer_to_a_question_asked_turns_ago_points_to_who_asked() -> None:
    turns = [
        Turn("aki", "ねぎとろさんは観葉植物を育ててますか？"),
        Turn("bo", "今日は寒いですね"),
        Turn("aki", "ほんとに"),
        Turn("bo", "雪が降りそう"),
        Turn("aki", "明日は晴れるらしいです"),
        Turn("neg", "観葉植物はモンステラを育ててます"),
    ]
    r = rows(turns, ["aki", "bo"])
    assert r["aki"]["their_question_topic"] > 0.2 and r["bo"]["their_question_topic"] == 0
    assert r["aki"]["topic_best"] == 1 and r["bo"]["topic_best"] == 0


def test_thanks_after_an_answer_and_a_greeting_back() -> None:
    turns = [
        Turn("ann", "which package has the wifi firmware?"),
        Turn("ben", "linux-firmware, then reboot"),
        Turn("cat", "hi all"),
        Turn("ann", "thanks, that fixed it"),
    ]
    r = rows(turns, ["ben", "cat"])
    assert r["ben"]["thanks_for_answer"] == 1 and r["ben"]["after_author_question"] == 1
    assert r["cat"]["after_author_question"] == 1 and r["cat"]["thanks_for_answer"] == 1
    hello = rows([Turn("ann", "hello!"), Turn("ben", "hey"), Turn("cat", "hello ann")],
                 ["ann", "ben"])
    assert hello["ann"]["greeting_back"] == 1


def test_a_request_answered() -> None:
    turns = [Turn("ann", "could you send me the log?"), Turn("ben", "ok, sending it now")]
    assert rows(turns, ["ann"])["ann"]["request_answered"] == 1


def test_the_shipped_model_hears_an_answer_to_a_question_five_turns_up() -> None:
    """The MRMP misses the issue names: an answer to something said several turns before."""
    turns = [
        Turn("aki", "ねぎとろさんはキャンプとかしますか？"),
        Turn("bo", "こんばんは"),
        Turn("neg", "こんばんは！"),
        Turn("bo", "今日は寒かったですね"),
        Turn("aki", "寒かったです"),
        Turn("bo", "雪が降りそうでした"),
        Turn("neg", "キャンプは夏にたまにします"),
    ]
    names = {k: [k] for k in ("aki", "bo", "neg")}
    result = AddresseeModel.shipped().predict(turns, 6, names)
    assert result.to == "aki", result.candidates
    assert any(n == "their_question_topic" and v > 0 for n, v in result.moved("aki"))


async def test_the_trace_says_in_words_what_was_said_that_moved_the_decision(
    tmp_path: Path,
) -> None:
    """A member answers the bot's question asked turns ago: the decision's trace names
    the content features that moved the models, in words (as `kuuki why` prints them)."""
    from tests.decide.test_scenarios import run_timeline

    from kuuki.explain.models import model_lines

    lines = [
        '{"setup": {"bot": "ソラ", "aliases": [], "language": "ja"}}',
        '{"id": "m1", "t": 0, "user": "ソラ", "text": "みなさんは観葉植物を育ててますか？"}',
        '{"id": "m2", "t": 15, "user": "bo", "text": "今日は寒いですね"}',
        '{"id": "m3", "t": 30, "user": "aki", "text": "ほんとに寒い"}',
        '{"id": "m4", "t": 45, "user": "bo", "text": "雪が降りそう"}',
        '{"id": "m5", "t": 60, "user": "aki", "text": "観葉植物はモンステラを育ててます"}',
        '{"after": "m5", "expect": {"action": ["none", "react", "ack", "reply"]}}',
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    timeline = await run_timeline(path, tmp_path)
    decision = next(d for k, d in timeline.entries if k == "decision" and d.message_id == "m5")
    said = decision.trace.features["addressee"]["content"]
    assert said and said[0][1] > 0
    assert said[0][0] in ("takes up their question", "answers their question")
    told = [line for part in model_lines(decision.trace.features, ["ソラ"]) for line in part]
    assert any(line.startswith("what was said, for ソラ (the bot): ")
               for line in told), told
