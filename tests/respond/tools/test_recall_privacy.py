"""`recall` answers under the prompts' privacy rule: a private channel's memory never
answers a question asked in a public channel (asserted on the tool result and on every
prompt the model was sent), while the private channel itself still finds it."""

from __future__ import annotations

from pathlib import Path

from kuuki.memory.fact_store import NewFact
from kuuki.testing.llm import tool_call
from memory.conftest import ALICE, GENERAL, SECRET, make

PRIVATE_FACT = "The venue for the offsite is the Harbor Loft, booked secretly."
PUBLIC_FACT = "The venue for the summer party is the Blue Hall."


def _fact(text: str) -> NewFact:
    return NewFact(text, ("alice",), ("venue",), 0.9, True)


async def _remember(h: object) -> None:
    memory = h.memory  # type: ignore[attr-defined]
    now = h.clock.now()  # type: ignore[attr-defined]
    for channel in (GENERAL, SECRET):
        memory.registry.add(channel)
    await memory.facts.add_many(SECRET, [_fact(PRIVATE_FACT)], now)
    await memory.facts.add_many(GENERAL, [_fact(PUBLIC_FACT)], now)


async def test_a_private_fact_never_answers_a_public_question(tmp_path: Path) -> None:
    h = await make(tmp_path)
    try:
        await _remember(h)
        h.llm.enqueue(tool_call("recall", {"query": "venue"}), purpose="reply")
        h.llm.enqueue("The summer party is at the Blue Hall.", purpose="reply-round2")
        await h.say(ALICE, "Kuu, what did we decide about the venue?", channel=GENERAL)
        calls = [c for c in h.llm.history if c.tools is not None]
        result = next(m.content for m in calls[1].messages if m.role == "tool")
        assert "Blue Hall" in result  # the public fact answers
        assert "Harbor Loft" not in result
        for call in h.llm.history:  # nor did any prompt hold it
            assert "Harbor Loft" not in call.prompt
        assert h.outbox.sent[-1][1].text == "The summer party is at the Blue Hall."
    finally:
        await h.app.close()


async def test_the_private_channel_itself_recalls_its_fact(tmp_path: Path) -> None:
    h = await make(tmp_path)
    try:
        await _remember(h)
        h.llm.enqueue(tool_call("recall", {"query": "venue offsite"}), purpose="reply")
        h.llm.enqueue("The Harbor Loft.", purpose="reply-round2")
        await h.say(ALICE, "Kuu, where is the offsite venue again?", channel=SECRET)
        calls = [c for c in h.llm.history if c.tools is not None]
        result = next(m.content for m in calls[1].messages if m.role == "tool")
        assert "Harbor Loft" in result
    finally:
        await h.app.close()
