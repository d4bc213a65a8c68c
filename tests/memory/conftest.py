from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from kuuki.app import App, build_app
from kuuki.clock import VirtualClock
from kuuki.decide.judge.base import AddressedOnlyJudge
from kuuki.domain import Channel, ChatEvent, Decision, EventKind, Message, User, Visibility
from kuuki.memory.keywords import keywords
from kuuki.memory.service import MemoryService
from kuuki.settings import Persona, Settings
from kuuki.testing import RecordingOutbox
from kuuki.testing.llm import ScriptedLLM

GENERAL = Channel("general", "general")
RANDOM = Channel("random", "random")
SECRET = Channel("hr", "hr-private", Visibility.PRIVATE)
DM = Channel("dm-alice", "alice", Visibility.DM)
ALICE = User("alice", "Alice")
BOB = User("bob", "Bob")
CAROL = User("carol", "Carol")


class FakeEmbedder:
    """Bag-of-keywords hashing: texts that share keywords have a high cosine."""

    dim = 512
    related = 0.45  # the Embedder protocol's cosine scale point

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for w in keywords(text, limit=50) or [text]:
                h = int(hashlib.sha1(w.encode()).hexdigest(), 16)
                out[i, h % self.dim] += 1.0
            out[i] /= max(float(np.linalg.norm(out[i])), 1e-8)
        return out


def settings(language: str = "en", **kw: Any) -> Settings:
    return replace(Settings(persona=Persona(language=language)), **kw)


@dataclass
class Harness:
    app: App
    clock: VirtualClock
    outbox: RecordingOutbox
    llm: ScriptedLLM
    decisions: list[Decision] = field(default_factory=list)
    n: int = 0

    @property
    def memory(self) -> MemoryService:
        assert self.app.memory is not None
        return self.app.memory

    async def say(
        self, user: User, text: str, *, channel: Channel = GENERAL, mid: str | None = None,
        **kw: Any,
    ) -> str:
        self.n += 1
        mid = mid or f"{channel.id}-m{self.n}"
        msg = Message(mid, channel.id, user, text, self.clock.now(), **kw)
        await self.app.engine.handle(ChatEvent(EventKind.POSTED, channel, mid, msg.ts,
                                               message=msg))
        await self.app.engine.idle()
        await self.memory.idle()
        return mid

    async def advance(self, seconds: float) -> None:
        await self.clock.advance(seconds)
        await self.app.engine.idle()
        await self.memory.idle()


async def make(
    tmp_path: Path, llm: ScriptedLLM | None = None, *, s: Settings | None = None,
    clock: VirtualClock | None = None, name: str = "store.sqlite3", dump: Any = None,
    store_url: str | None = None,
) -> Harness:
    clock = clock or VirtualClock()
    outbox = RecordingOutbox(clock, User("Kuu", "Kuu", is_bot=True))
    llm = llm or ScriptedLLM()
    app = await build_app(
        s or settings(), clock=clock, outbox=outbox, llm=llm, judge_llm=None,
        store=store_url or f"sqlite:///{tmp_path / name}", judge=AddressedOnlyJudge(),
        embedder=FakeEmbedder(), dump=dump,
    )
    h = Harness(app, clock, outbox, llm)
    app.engine.on_decision(h.decisions.append)
    return h


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    harness = await make(tmp_path)
    yield harness
    await harness.app.close()


def summary_answer(summary: str = "Alice and Bob plan a hike.", **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "summary": summary, "mood": "casual and cheerful", "topics": ["hike", "weekend"],
        "recent_events": "A hike was planned for Saturday.",
        "history": "A channel where friends plan outings.", "threads": [],
    }
    base.update(kw)
    return base


def reflection_answer(*facts: dict[str, Any], people: Sequence[dict[str, Any]] = ()) -> dict[
        str, Any]:
    return {"facts": list(facts), "people": list(people)}


def fact(content: str, about: Sequence[str], kws: Sequence[str], *, shareable: bool = True,
         confidence: float = 0.9) -> dict[str, Any]:
    return {"content": content, "about": list(about), "keywords": list(kws),
            "confidence": confidence, "shareable": shareable}
