"""`kuuki bench seat`: the bot in a member's seat of MRMP dialogues, and a silent fourth.

Two hand-written dialogues run through the real engine (no model), with outcomes today's
pipeline is sure of: a message that starts with the seat's name is answered, a message
one member puts to another by name is left to them, and nobody calls the fourth member.
The AUC and the figures' arithmetic are checked on hand-made values.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kuuki.bench.seat import SILENT, bench_seat, print_report, transcript_lines
from kuuki.bench.seat_metrics import Judged, auc, judged, labelled, summary
from kuuki.bench.seat_replay import Variant
from kuuki.cli import main
from kuuki.conversation.mrmp import read_split
from kuuki.domain import Action, ActionKind, Decision, DecisionTrace, Stage
from kuuki.errors import KuukiError
from kuuki.replay.expect import Played
from kuuki.settings import Settings

MEMBERS = ["あずき", "たらこ", "いくら"]


def utterance(n: int, who: str, text: str, to: str | None = None) -> dict[str, Any]:
    marked = f"@{to} {text}" if to else text
    return {"utterance_id": n, "interlocutor_id": who, "text": marked,
            "mention_to": [to] if to else []}


# (author, text, addressee) of each line; the labelled ones name their addressee first.
EVENING = [
    ("あずき", "こんばんは", None),
    ("たらこ", "こんばんは！", None),
    ("いくら", "こんばんは、よろしくお願いします", None),
    ("あずき", "たらこさん、週末は何をしていましたか？", "たらこ"),
    ("たらこ", "山に登っていました", None),
    ("いくら", "あずきさん、映画は好きですか？", "あずき"),
    ("あずき", "好きです、よく観ます", None),
]
SUMMER = [
    ("いくら", "今日は暑かったですね", None),
    ("あずき", "本当に暑かったです", None),
    ("たらこ", "いくらさん、夏休みはどこか行きますか？", "いくら"),
    ("いくら", "海に行く予定です", None),
    ("たらこ", "いいですね", None),
]


@pytest.fixture
def dialogues(tmp_path: Path) -> Path:
    for name, lines in (("T0001", EVENING), ("T0002", SUMMER)):
        raw = {"dialogue_id": name, "dialogue_type": "First time", "interlocutors": MEMBERS,
               "utterances": [utterance(n, *line) for n, line in enumerate(lines)]}
        (tmp_path / f"{name}.json").write_text(json.dumps(raw, ensure_ascii=False), "utf-8")
    return tmp_path


def test_each_seat_gets_the_dialogue_as_its_own_transcript(dialogues: Path) -> None:
    first = read_split(dialogues)[0]
    lines = transcript_lines(first, "たらこ", 15)
    assert lines[0] == {"setup": {"bot": "たらこ", "language": "ja", "aliases": []}}
    assert [(o["id"], o["t"], o["user"]) for o in lines[1:4]] == [
        ("u0", 0, "あずき"), ("u1", 15, "たらこ"), ("u2", 30, "いくら")]
    assert lines[4]["text"] == "たらこさん、週末は何をしていましたか？"  # the @-mark removed
    assert all("mentions" not in o for o in lines)
    silent = transcript_lines(first, SILENT, 10)
    assert silent[0] == {"setup": {"bot": SILENT, "language": "ja"}}
    assert silent[-1]["t"] == 60
    # to the seat or to the other, never the seat's own line
    assert labelled(first, "たらこ") == [(3, True), (5, False)]
    assert labelled(first, "あずき") == [(5, True)]


async def test_named_messages_are_answered_and_others_exchanges_left(dialogues: Path) -> None:
    result = await bench_seat(Settings(), dialogues, [60.0, 10.0])
    assert result["dialogues"] == 2 and result["messages"] == 12
    for gap in result["by_gap"]:
        assert gap["replays"] == 8
        # T0001: u3 to たらこ, u5 to あずき; T0002: u2 to いくら; each the other for one seat
        assert gap["labelled"] == {"to_seat": 3, "to_other": 3}
        assert gap["replied_or_acked"]["to_seat"] == {"messages": 3, "spoke": 3, "share": 1.0}
        assert gap["replied_or_acked"]["to_other"] == {"messages": 3, "spoke": 0, "share": 0.0}
        assert gap["auc"]["first_decision"] == 1.0
        assert gap["silent_member"] == {"messages": 12, "replies": 0, "acks": 0,
                                        "per_100": 0.0}


def test_the_cli_prints_one_json_object_and_a_table(
    dialogues: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "seat", str(dialogues), "--gap", "30", "--limit", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"benchmark", "dir", "llm", "variant", "dialogues", "messages",
                        "targets", "by_gap", "seconds"}
    assert out["variant"] == "shadow"
    assert out["benchmark"] == "seat" and out["dialogues"] == 1 and out["messages"] == 7
    assert out["targets"]["auc"] == ">= 0.80"
    (gap,) = out["by_gap"]
    assert set(gap) == {"gap", "replays", "labelled", "no_decision", "auc",
                        "replied_or_acked", "previous_line_mine", "silent_member", "seconds"}
    assert gap["gap"] == 30 and gap["labelled"] == {"to_seat": 2, "to_other": 2}
    assert set(gap["auc"]) == {"first_decision", "no_decision_lowest"}
    table = io.StringIO()
    print_report(out, table)
    text = table.getvalue()
    assert "gap 30 s" in text and "2/2 100.0 %" in text and "0/2 0.0 %" in text
    assert ">= 0.80" in text and "<= 2" in text


def test_bad_input_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "seat", str(tmp_path)]) == 2
    assert "no MRMP dialogue files" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "seat", str(tmp_path), "--gap", "0"])
    assert "--gap: '0' is not seconds" in capsys.readouterr().err
    with pytest.raises(KuukiError, match="limit 0"):
        asyncio.run(bench_seat(Settings(), tmp_path, limit=0))
    with pytest.raises(KuukiError, match="gap -1"):
        asyncio.run(bench_seat(Settings(), tmp_path, [-1.0]))


def test_auc_counts_ties_as_half() -> None:
    assert auc([3, 4], [1, 2]) == 1.0
    assert auc([1, 2], [3, 4]) == 0.0
    assert auc([5, 5, 5], [5, 5]) == 0.5  # all equal
    # pairs: (2,1) win, (2,2) tie, (2,3) loss, (3,1) win, (3,2) win, (3,3) tie
    assert auc([2, 3], [1, 2, 3]) == pytest.approx(4 / 6)
    assert auc([-math.inf, 1], [-math.inf]) == 0.75
    assert auc([], [1]) is None and auc([1], []) is None


def test_summary_gives_both_aucs_and_the_shares() -> None:
    reply, none = ActionKind.REPLY, ActionKind.NONE
    items = [
        Judged(True, 50, reply), Judged(True, None, ActionKind.ACK), Judged(True, 10, none),
        Judged(False, 20, ActionKind.REACT), Judged(False, None, none),
    ]
    s = summary(items)
    assert s["labelled"] == {"to_seat": 3, "to_other": 2}
    assert s["no_decision"] == {"to_seat": 1, "to_other": 1}
    # ignoring the two without a line: 50 > 20, 10 < 20
    assert s["auc"]["first_decision"] == 0.5
    # as the lowest, seat (50, 10, -inf) vs other (20, -inf): 50 beats both, 10 beats
    # -inf, -inf ties -inf: 3.5 of 6 pairs
    assert s["auc"]["no_decision_lowest"] == round(3.5 / 6, 3)
    assert s["replied_or_acked"]["to_seat"] == {"messages": 3, "spoke": 2, "share": 0.667}
    assert s["replied_or_acked"]["to_other"] == {"messages": 2, "spoke": 0, "share": 0.0}


def test_the_first_decision_line_and_the_strongest_action_until_the_next_message(
    dialogues: Path,
) -> None:
    first = read_split(dialogues)[0]
    assert labelled(first, "たらこ") == [(3, True), (5, False)]  # u3 to it, u5 to あずき
    assert labelled(first, "いくら") == [(3, False)]  # u5 is its own line
    t0 = datetime(2026, 1, 5, tzinfo=UTC)

    def decided(mid: str, kind: ActionKind, score: float) -> Decision:
        return Decision(mid, "general", Action(kind, "general", mid), Stage.LOCAL, score, "",
                        t0, DecisionTrace(mid, "general", t0 + timedelta(seconds=1)))

    timeline = Played()
    decisions = [decided("u3", ActionKind.NONE, 40.04), decided("u3", ActionKind.REPLY, 90)]
    for n in range(7):
        timeline.message(f"u{n}")
        if n == 3:
            timeline.decision(decisions[0])
        if n == 4:  # the re-check of u3 comes after u4: it is not u3's window
            timeline.decision(decisions[1])
    # u5 has no decision line: its debounce was superseded
    assert judged(first, "たらこ", decisions, timeline) == [
        Judged(True, 40.0, ActionKind.NONE),
        Judged(False, None, ActionKind.NONE, after_own=True)]  # u5 follows たらこ's u4
    assert [j.after_own for j in judged(first, "たらこ", decisions, timeline)] == [False, True]
    assert [j.mentioned for j in judged(first, "たらこ", decisions, timeline,
                                        mentions=True)] == [True, False]


async def test_with_mentions_the_removed_marks_are_platform_mentions(dialogues: Path) -> None:
    first = read_split(dialogues)[0]
    lines = transcript_lines(first, "たらこ", 15, mentions=True)
    assert lines[4]["mentions"] == ["たらこ"] and "mentions" not in lines[5]
    assert lines[4]["text"] == "たらこさん、週末は何をしていましたか？"
    result = await bench_seat(Settings(), dialogues, [15.0], variant=Variant(mentions=True))
    (gap,) = result["by_gap"]
    assert result["variant"] == "shadow, @name as mentions"
    assert gap["replied_or_acked"]["mentioned"] == {"messages": 3, "spoke": 3, "share": 1.0}


async def test_in_shadow_the_seat_s_real_lines_are_its_own_and_nothing_else(
    dialogues: Path,
) -> None:
    """Without shadow the bot's answers join the timeline beside the seat's real lines; in
    shadow the transcript's lines are all that was said (the bot's answers only recorded)."""
    from kuuki.bench.seat_replay import replay_lines

    first = read_split(dialogues)[0]
    lines = transcript_lines(first, "たらこ", 15)
    _, shadowed = await replay_lines(Settings(), lines, "t", shadow=True)
    _, live = await replay_lines(Settings(), lines, "t", shadow=False)
    spoke = [d for k, d in shadowed.entries if k == "decision" and d.action.kind.value != "none"]
    assert spoke and all(d.shadow for d in spoke)
    assert not any(d.shadow for k, d in live.entries if k == "decision")


IRC_LOG = [
    "[10:00] <alice> hi all",
    "[10:01] <helper> alice: which release are you on?",
    "[10:01] <alice> helper: 22.04, and the wifi drops every hour",
    "[10:02] <bob> anyone know a good irc client?",
    "[10:02] <carol> bob: hexchat",
    "[10:03] <alice> helper: I ran lspci as you said",
    "[10:03] <helper> alice: paste it please",
    "[10:04] <alice> helper, here: http://paste.ubuntu.com/1",
    "[10:05] <carol> bob: or irssi if you like the terminal",
]
# "child parent" (0-based lines); the annotation file holds "parent child -"
IRC_LINKS = ["0 0", "1 0", "2 1", "3 3", "4 3", "5 1", "6 5", "7 6", "8 3"]


@pytest.fixture
def irc_split(tmp_path: Path) -> Path:
    (tmp_path / "2020-01-01.ascii.txt").write_text("\n".join(IRC_LOG) + "\n", "utf-8")
    (tmp_path / "2020-01-01.annotation.txt").write_text(
        "\n".join(f"{p.split()[1]} {p.split()[0]} -" for p in IRC_LINKS) + "\n", "utf-8")
    return tmp_path


def test_the_irc_seat_is_the_one_others_most_answer_and_nicks_can_be_removed() -> None:
    from kuuki.bench.seat_irc import seat_of
    from kuuki.conversation.ircdata import parse_line
    from kuuki.decide.models.turns import irc_chat, strip_leading_nick

    lines = [parse_line(i, raw) for i, raw in enumerate(IRC_LOG)]
    gold = {int(c): [int(p)] for c, p in (x.split() for x in IRC_LINKS)}
    chat = irc_chat("x", lines, gold)
    assert seat_of(chat) == "helper"  # answered by alice three times; bob twice
    assert strip_leading_nick("helper, here: http://x", ["helper", "alice"]) == "here: http://x"
    assert strip_leading_nick("Helper: ok", ["helper"]) == "ok"
    assert strip_leading_nick("I told helper: no", ["helper"]) == "I told helper: no"
    assert strip_leading_nick("helper:", ["helper"]) == "helper:"


async def test_irc_logs_put_the_bot_in_the_helper_s_seat(irc_split: Path) -> None:
    result = await bench_seat(Settings(), irc_split)
    (figures,) = result["by_gap"]
    # to the helper: lines 2, 5, 7 (alice); to others: carol's answers to bob (4, 8)
    assert figures["labelled"] == {"to_seat": 3, "to_other": 2}
    assert figures["replied_or_acked"]["named"] == {"messages": 3, "spoke": 3, "share": 1.0}
    assert figures["replied_or_acked"]["to_other"]["spoke"] == 0
    assert figures["previous_line_mine"]["to_seat"] == {"messages": 3, "spoke": 2,
                                                        "share": 0.667}
    stripped = await bench_seat(Settings(), irc_split, variant=Variant(strip_nick=True))
    assert stripped["variant"] == "shadow, leading nick removed"
    # with the nicks gone no line names the helper: who it is for must be inferred
    assert "named" not in stripped["by_gap"][0]["replied_or_acked"]
    assert stripped["by_gap"][0]["labelled"] == {"to_seat": 3, "to_other": 2}


def test_a_nick_another_participant_goes_by_does_not_name_the_seat() -> None:
    """``ActionParsnip1`` in the seat while ``ActionParsnip`` also speaks (a dev log):
    "ActionParsnip: …" names the other participant, as the gold links say; with nobody
    else by that name the nick without its digits still names the seat."""
    from kuuki.bench.seat_irc import seat_forms

    both = {"ActionParsnip1": ("ActionParsnip1",), "ActionParsnip": ("ActionParsnip",),
            "dnyy": ("dnyy",)}
    assert seat_forms("ActionParsnip1", both) == ("actionparsnip1",)
    alone = {"ActionParsnip1": ("ActionParsnip1",), "dnyy": ("dnyy",)}
    assert seat_forms("ActionParsnip1", alone) == ("actionparsnip1", "actionparsnip")
