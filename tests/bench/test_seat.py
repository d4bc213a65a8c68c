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
    assert set(out) == {"benchmark", "dir", "llm", "dialogues", "messages", "targets",
                        "by_gap", "seconds"}
    assert out["benchmark"] == "seat" and out["dialogues"] == 1 and out["messages"] == 7
    assert out["targets"]["auc"] == ">= 0.80"
    (gap,) = out["by_gap"]
    assert set(gap) == {"gap", "replays", "labelled", "no_decision", "auc",
                        "replied_or_acked", "silent_member", "seconds"}
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
        Judged(True, 40.0, ActionKind.NONE), Judged(False, None, ActionKind.NONE)]
