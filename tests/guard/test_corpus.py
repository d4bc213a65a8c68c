"""The guard against what models really wrote (tests/guard/corpus/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kuuki.app import reply_guard
from kuuki.guard.judgment import judgment_problem
from kuuki.guard.memory import MemoryCheck
from kuuki.guard.reply import Expect, ReplyGuard
from kuuki.prompts import Prompts
from kuuki.settings import Settings

CORPUS = Path(__file__).parent / "corpus"


def _load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CORPUS / name).read_text("utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def guard() -> ReplyGuard:
    return reply_guard(Settings(), Prompts("ja"))


def _expect(item: dict[str, Any]) -> Expect:
    return Expect(item["lang"], item["conversation"], item["speakers"],
                  truncated=item.get("truncated", False))


BAD = _load("replies_bad.jsonl")
GOOD = _load("replies_good.jsonl")
JUDGE = _load("judge.jsonl")
MEMORY = _load("memory.jsonl")


def test_the_corpus_is_as_large_as_promised() -> None:
    models = [i for i in BAD if i["source"] != "written"]
    assert len(models) >= 40 and {i["source"] for i in models} == {"embedded", "openai"}
    assert len(GOOD) >= 40 and {i["lang"] for i in GOOD} == {"ja", "en"}


@pytest.mark.parametrize("item", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_replies_are_rejected_for_what_is_wrong(guard: ReplyGuard, item: dict[str, Any]) -> None:
    verdict = guard.check(item["text"], _expect(item))
    assert not verdict.ok, item["text"]
    assert verdict.check in item["rejected_by"], (verdict.check, verdict.reason, item["text"])
    assert verdict.reason


@pytest.mark.parametrize("item", GOOD, ids=[f"good{i}" for i in range(len(GOOD))])
def test_good_replies_pass_unchanged(guard: ReplyGuard, item: dict[str, Any]) -> None:
    verdict = guard.check(item["text"], _expect(item))
    assert verdict.ok, (verdict.check, verdict.reason, item["text"])
    assert verdict.text == item["text"] and verdict.repairs == ()


@pytest.mark.parametrize("item", JUDGE, ids=[f"judge{i}" for i in range(len(JUDGE))])
def test_judge_answers_are_checked_for_meaning(guard: ReplyGuard, item: dict[str, Any]) -> None:
    problem = judgment_problem(item["data"], guard.scaffold)
    assert (problem is None) == item["ok"], (problem, item["data"])


@pytest.mark.parametrize("item", MEMORY, ids=[f"memory{i}" for i in range(len(MEMORY))])
def test_summaries_are_checked_before_they_are_kept(
    guard: ReplyGuard, item: dict[str, Any]
) -> None:
    d = item["data"]
    check = MemoryCheck(guard.scaffold, item["lang"])
    check.text("summary", str(d["summary"]))
    check.text("mood", str(d["mood"]), required=False)
    check.items("topics", d["topics"], keywords=True)
    check.text("history", str(d["history"]), required=False)
    check.text("recent_events", str(d["recent_events"]), required=False)
    assert check.ok == item["ok"], (check.problems, d)


def test_the_shipped_model_s_judge_answer_from_issue_10_is_refused(guard: ReplyGuard) -> None:
    answer = {"should_respond": True, "response_type": "none", "confidence": 0.4, "reason": "why"}
    assert judgment_problem(answer, guard.scaffold) == (
        "contradiction: should_respond is true but response_type is none"
    )
    answer["response_type"] = "reply"
    assert judgment_problem(answer, guard.scaffold) == "the reason says nothing (“why”)"
