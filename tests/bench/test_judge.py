"""`kuuki bench judge`: the IRC converter and one small run (figures, never timed asserts)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from kuuki.bench.judge import irc_to_transcript, run_bench_judge
from kuuki.replay.transcript import parse_lines

IRC = """[03:41] <alice> hi, how do I install the nvidia driver on ubuntu?
=== bob [~bob@host]  has joined #ubuntu
[03:41] <bob> alice: sudo apt install nvidia-driver
[03:42] * carol waves
[03:42] <alice> bob: thanks!
[23:59] <dave> late night
[00:01] <erin> past midnight
"""


def test_irc_lines_become_a_transcript() -> None:
    objs = irc_to_transcript(IRC.splitlines(), name="t")
    setup, lines = objs[0], objs[1:]
    assert "apt" in setup["setup"]["keywords"]
    assert [o["user"] for o in lines] == ["alice", "bob", "carol", "alice", "dave", "erin"]
    assert lines[0]["t"] < lines[1]["t"]  # two lines in one minute are spread over it
    transcript = parse_lines([json.dumps(o) for o in objs])
    assert len(transcript.events) == 6  # in time order, across midnight


def test_bench_prints_one_json_line(tmp_path: Path) -> None:
    (tmp_path / "x.ascii.txt").write_text(IRC, encoding="utf-8")
    out = io.StringIO()
    result = run_bench_judge(tmp_path, out)
    line = json.loads(out.getvalue())
    assert line == result
    assert line["ambient"] == 6 and line["files"] == 1
    assert {"llm_calls_per_100_ambient", "local_p50_ms", "local_p99_ms"} <= set(line)
    assert line["local_samples"] > 0  # the bench asks the local stage for its latencies


def test_gold_figures_count_replies_to_answered_messages_and_open_questions(
    tmp_path: Path,
) -> None:
    from datetime import UTC, datetime, timedelta

    from kuuki.bench.judge_gold import gold_figures
    from kuuki.domain import (
        Action,
        ActionKind,
        Channel,
        Decision,
        DecisionTrace,
        Message,
        Stage,
        User,
    )

    t0 = datetime(2026, 1, 5, tzinfo=UTC)
    ch = Channel("ubuntu", "ubuntu")

    def m(line: int, sec: float, who: str, text: str) -> Message:
        return Message(f"l{line}", ch.id, User(who, who), text, t0 + timedelta(seconds=sec))

    msgs = [
        m(1000, 0, "ann", "how do I change the grub timeout?"),
        m(1001, 30, "bo", "edit /etc/default/grub and run update-grub"),
        m(1002, 60, "cy", "anyone know why wifi drops after suspend?"),
        m(1003, 900, "dee", "is there a way to list held packages?"),
    ]
    ann = tmp_path / "x.annotation.txt"
    ann.write_text("1000 1000 -\n1000 1001 -\n1002 1002 -\n1003 1003 -\n")

    def spoke(line: int, sec: float) -> Decision:
        action = Action(ActionKind.REPLY, ch.id, f"l{line}")
        trace = DecisionTrace(f"l{line}", ch.id, t0)
        return Decision(f"l{line}", ch.id, action, Stage.LOCAL, 55, "", t0 + timedelta(
            seconds=sec), trace)

    line_of = {x.id: int(x.id[1:]) for x in msgs}
    # the bot answered l1000 after bo did (40 s), and l1002, which nobody answered
    g = gold_figures(ann, line_of, msgs, [spoke(1000, 40), spoke(1002, 240)]).as_dict()
    assert g["unprompted_replies"] == 2 and g["already_answered"] == 1
    assert g["already_answered_share"] == 0.5
    assert g["unanswered_questions"] == 2 and g["unanswered_picked_up"] == 1
