from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kuuki.conversation.tracker import ConversationTracker
from kuuki.domain import Message, User
from kuuki.embed import default_embedder

from .conftest import BigramEmbedder

T0 = datetime(2026, 1, 10, 20, 0, tzinfo=UTC)
TANAKA = User("u1", "田中")
SATO = User("u2", "佐藤")
SUZUKI = User("u3", "鈴木")
YAMADA = User("u4", "山田")
TAKAHASHI = User("u5", "高橋")
KUU = User("b1", "くう", is_bot=True)


class Chat:
    """Feeds a tracker a hand-written transcript, one message per 30 s."""

    def __init__(self, tracker: ConversationTracker) -> None:
        self.tracker = tracker
        self.n = 0

    def say(self, user: User, text: str, *, reply_to: str | None = None, gap_s: float = 30) -> str:
        self.n += 1
        mid = f"m{self.n}"
        ts = T0 + timedelta(seconds=gap_s * self.n)
        self.tracker.observe(Message(mid, "c1", user, text, ts, reply_to=reply_to))
        return mid

    @property
    def now(self) -> datetime:
        return T0 + timedelta(seconds=30 * self.n)


@pytest.fixture
def chat() -> Chat:
    # the real default embedder: the static table loads in a fraction of a second
    tracker = ConversationTracker("c1", embedder=default_embedder(), bot_names=("くう", "Kuu"))
    for u in (TANAKA, SATO, SUZUKI, YAMADA, TAKAHASHI, KUU):
        tracker.know_user(u)
    return Chat(tracker)


def _interleaved(chat: Chat) -> tuple[list[str], list[str]]:
    ramen, game = [], []
    ramen.append(chat.say(TANAKA, "佐藤さん、昨日のラーメン屋どうだった？"))
    game.append(chat.say(SUZUKI, "山田さん、新しいゲームもう買いました？"))
    ramen.append(chat.say(SATO, "田中さん、めちゃくちゃ美味しかったよ！スープが濃厚で"))
    game.append(chat.say(YAMADA, "鈴木さん、まだです。発売日いつでしたっけ？"))
    ramen.append(chat.say(TANAKA, "佐藤さん、いいなあ。今度一緒に行こうよ"))
    game.append(chat.say(SUZUKI, "山田さん、来週の金曜日ですよ"))
    ramen.append(chat.say(SATO, "田中さん、ぜひ！土曜日はどう？"))
    game.append(chat.say(YAMADA, "鈴木さん、ありがとう、予約しておきます"))
    return ramen, game


def test_two_interleaved_japanese_conversations_are_separated(chat: Chat) -> None:
    ramen, game = _interleaved(chat)
    t = chat.tracker
    a = {t.conversation_of(m) for m in ramen}
    b = {t.conversation_of(m) for m in game}
    assert len(a) == 1 and len(b) == 1 and a != b
    conv_a = t.conversation(a.pop() or "")
    assert conv_a is not None
    assert conv_a.message_ids == ramen
    assert conv_a.participants == ["u1", "u2"]
    assert conv_a.topic is not None


def test_unaddressed_followup_stays_with_its_speaker(chat: Chat) -> None:
    ramen, game = _interleaved(chat)
    follow = chat.say(TANAKA, "土曜日OK！駅前に12時集合で")
    t = chat.tracker
    assert t.conversation_of(follow) == t.conversation_of(ramen[0])
    assert t.conversation_of(follow) != t.conversation_of(game[0])


def test_bot_name_call_and_same_conversation(chat: Chat) -> None:
    t = chat.tracker
    q = chat.say(SATO, "くうさん、おすすめのラーメンある？")
    bot = chat.say(KUU, "佐藤さん、味噌ラーメンが好きです！", reply_to=q)
    assert t.conversation_of(bot) == t.conversation_of(q)
    bot_conv = t.conversation_of(bot)
    thanks = chat.say(SATO, "くうさん、ありがとう！行ってみる")
    same, conf = t.same_conversation(bot_conv, thanks)
    assert same and 0.0 < conf <= 1.0
    other = chat.say(YAMADA, "鈴木さん、明日の会議って何時からでしたっけ？")
    same, conf = t.same_conversation(bot_conv, other)
    assert not same and conf > 0.5
    assert t.reply_target(bot_conv or "") == thanks


def test_platform_reply_reference_wins(chat: Chat) -> None:
    t = chat.tracker
    first = chat.say(TANAKA, "明日の天気はどうかな")
    chat.say(SUZUKI, "山田さん、ゲームの話ですけど")
    reply = chat.say(YAMADA, "晴れるらしいよ", reply_to=first)
    assert t.conversation_of(reply) == t.conversation_of(first)


def test_unanswered_questions_to_the_room(chat: Chat) -> None:
    t = chat.tracker
    room_q = chat.say(YAMADA, "誰かPythonの入門書でおすすめありますか？")
    direct_q = chat.say(TANAKA, "佐藤さん、明日は来ますか？")
    chat.say(SATO, "田中さん、行きます！")
    late = chat.now
    assert t.unanswered_questions(late, min_age_s=3600) == []
    later = late + timedelta(minutes=5)
    got = [m.id for m in t.unanswered_questions(later, min_age_s=60)]
    assert got == [room_q]
    assert direct_q not in got
    chat.say(SUZUKI, "山田さん、それなら「みんなのPython」がいいですよ", reply_to=room_q)
    assert t.unanswered_questions(later, min_age_s=60) == []


def test_alive_edit_and_delete(chat: Chat) -> None:
    ramen, game = _interleaved(chat)
    t = chat.tracker
    alive = t.alive(chat.now)
    assert {c.id for c in alive} == {ramen[0], game[0]}
    assert alive[0].last_activity >= alive[1].last_activity
    assert t.alive(chat.now + timedelta(hours=2)) == []
    t.edit(game[-1], "鈴木さん、ありがとう！")
    msgs = t.messages(game[0])
    assert msgs[-1].text == "鈴木さん、ありがとう！" and msgs[-1].edited
    t.delete(game[-1])
    conv = t.conversation(game[0])
    assert conv is not None and game[-1] not in conv.message_ids


def test_each_message_is_embedded_once(embedder: BigramEmbedder) -> None:
    t = ConversationTracker("c1", embedder=embedder)
    for k in range(120):  # more than the window: old messages drop out of the state
        msg = Message(
            f"x{k}",
            "c1",
            User(f"u{k % 3}", f"user{k % 3}"),
            f"message {k}",
            T0 + timedelta(seconds=k),
        )
        t.observe(msg)
        t.observe(msg)  # a redelivery is not a new message
    assert embedder.calls == 120
    assert t.conversation_of("x119") is not None


def test_the_tracker_is_bounded_by_text_as_well_as_by_messages() -> None:
    """Long pastes (20,000 characters each, the engine's cut) push out the oldest messages
    once the channel's text passes the bound, long before the message count does."""
    from kuuki.conversation import tracker as module

    tr = ConversationTracker("c1", embedder=BigramEmbedder())
    chat = Chat(tr)
    first = chat.say(TANAKA, "short hello")
    pastes = [chat.say(SATO, f"log {i} " + "x" * 20_000) for i in range(40)]
    kept = [m for m in [first, *pastes] if tr.conversation_of(m) is not None]
    assert first not in kept and pastes[-1] in kept
    assert sum(len(tr._seen[m].msg.text) for m in kept) <= module._MAX_TEXT_CHARS
    assert len(kept) >= module._MAX_TEXT_CHARS // 20_100  # as many as fit, not fewer
