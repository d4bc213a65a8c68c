"""Keeping a forgotten person forgotten in a running bot.

The store erases a person and leaves a tombstone (kuuki.store.forgetting), and refuses
every later write of theirs. This is the memory layer's half: it stops learning from a
forgotten person at once (`MemoryService.observe` asks `in`), and it purges what the bot
still holds in memory — their profile, the channel contexts and summaries cached from
channels they spoke in, the facts index, other people's "last conversation" notes from
those channels, and (through the engine, which erases them itself:
`EngineControl.forget_person`) their messages in the channel buffers and conversation
trackers — both when it forgets someone itself (`/kuuki forget-me`, `kuuki memory forget`
run in the same process) and when it reads a tombstone another process left (the CLI
against a live bot's store): it reads the tombstones every `CHECK_EVERY_S` while messages
come in, at each maintenance run, and before profiles are written on close.

Forgotten means forgotten until lifted: while the tombstone stands the bot still hears the
person in the moment (it may answer a question), but keeps nothing of what they say.
`unforget` lifts it; what was erased stays erased.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Protocol

from kuuki.clock import Clock
from kuuki.memory.book import MemoryBook
from kuuki.memory.fact_store import FactMemory
from kuuki.memory.proactive import ProactiveTalker
from kuuki.memory.profiles import Profiles
from kuuki.memory.summarizer import Summarizer
from kuuki.ports import EngineControl
from kuuki.store.forgetting import Forgotten

log = logging.getLogger("kuuki.memory")

CHECK_EVERY_S = 60.0


class TombstoneStore(Protocol):
    """What the store offers for forgetting (kuuki.store.forgetting.ForgetMixin)."""

    async def forgotten_users(self) -> dict[str, datetime]: ...

    async def forget_user(self, user_id: str, *, at: datetime | None = None) -> Forgotten: ...

    async def unforget_user(self, user_id: str) -> bool: ...


class Forgetting:
    """The set of forgotten people as the running bot knows it, and the purge."""

    def __init__(
        self, store: TombstoneStore, clock: Clock, *, profiles: Profiles, book: MemoryBook,
        summarizer: Summarizer, facts: FactMemory, proactive: ProactiveTalker,
    ) -> None:
        self.store = store
        self.clock = clock
        self.profiles = profiles
        self.book = book
        self.summarizer = summarizer
        self.facts = facts
        self.proactive = proactive
        self.ids: set[str] = set()
        self._checked: datetime | None = None

    def __contains__(self, user_id: object) -> bool:
        return user_id in self.ids

    async def load(self) -> None:
        self.ids = set(await self.store.forgotten_users())
        self._checked = self.clock.now()

    def due(self) -> bool:
        """True when the tombstones should be read again; claims the check if so."""
        now = self.clock.now()
        if self._checked is not None and (now - self._checked).total_seconds() < CHECK_EVERY_S:
            return False
        self._checked = now
        return True

    async def check(self, engine: EngineControl | None) -> list[str]:
        """Read the tombstones; purge from memory everyone newly forgotten (by another
        process); return their ids. A lifted tombstone lets the bot learn again."""
        self._checked = self.clock.now()
        current = set(await self.store.forgotten_users())
        new = sorted(current - self.ids)
        self.ids = current
        for uid in new:
            await self.purge(uid, engine)
        if new:
            log.info("forgot %d %s on the store's word", len(new),
                     "person" if len(new) == 1 else "people")
        return new

    async def forget(self, user_id: str, engine: EngineControl | None) -> Forgotten:
        """Forget ``user_id`` here and in the store."""
        self.ids.add(user_id)  # learning stops now, before anything is awaited
        channels = self._channels_of(user_id, engine)
        self.profiles.forget(user_id)  # before the store: a flush meanwhile has nothing
        report = await self.store.forget_user(user_id, at=self.clock.now())
        await self.purge(user_id, engine, channels)
        return report

    async def unforget(self, user_id: str) -> bool:
        self.ids.discard(user_id)
        return await self.store.unforget_user(user_id)

    def _channels_of(self, user_id: str, engine: EngineControl | None) -> set[str]:
        found: set[str] = set()
        p = self.profiles.get(user_id)
        if p is not None:
            found |= set(p.channels_active)
        if engine is not None:
            found |= engine.channels_of(user_id)
        return found

    async def purge(
        self, user_id: str, engine: EngineControl | None, channels: set[str] | None = None
    ) -> None:
        """Drop from memory everything of ``user_id`` the store no longer has."""
        if channels is None:
            channels = self._channels_of(user_id, engine)
        self.profiles.forget(user_id)
        # Other people's notes from those conversations may quote them (the store drops
        # the same entries); dirty, so the next flush writes the scrubbed profile.
        self.profiles.drop_summaries(channels)
        self.summarizer.drop_user(user_id)
        self.summarizer.reload()
        await self.book.load()
        await self.facts.load()
        self.proactive.forget_cache()
        if engine is not None:  # their messages, and the bot's answers to them
            engine.forget_person(user_id)
