"""`kuuki bench seat`: the bot in a member's seat of MRMP dialogues, and a silent fourth.

Two hand-written dialogues run through the real engine (no model), with outcomes today's
pipeline is sure of: a message that starts with the seat's name is answered, a message
one member puts to another by name is left to them, and nobody calls the fourth member.
The AUC and the figures' arithmetic are checked on hand-made values.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kuuki.bench.seat_metrics import Judged, auc, judged, labelled, summary
from kuuki.conversation.mrmp import read_split
from kuuki.domain import Action, ActionKind, Decision, DecisionTrace, Stage
from kuuki.replay.expect import Timeline

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

    timeline = Timeline()
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
