"""`kuuki bench judge`: the IRC converter and one small run (figures, never timed asserts)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from kuuki.judge.bench import irc_to_transcript, run_bench_judge
from kuuki.platforms.transcript import parse_lines

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
