"""Each channel's policy while the bot runs: kuuki.toml's `[channels.policy.<channel>]`
tables with `/kuuki mode`'s changes laid over, read from the store at start-up and written
to it on every change, so a change survives a restart (kuuki.settings.policy.PolicyBook,
kuuki.store.policies).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kuuki.clock import Clock
from kuuki.domain import Channel, User
from kuuki.errors import ConfigError
from kuuki.settings import Settings
from kuuki.settings.policy import ChannelPolicy, PolicyBook, changed

if TYPE_CHECKING:
    from kuuki.store import Store

log = logging.getLogger("kuuki.policy")


class ChannelPolicies:
    """The book of policies and where its changes are kept (None: no store, changes last
    as long as the process)."""

    def __init__(self, book: PolicyBook, store: Store | None, clock: Clock) -> None:
        self.book = book
        self.store = store
        self.clock = clock

    @classmethod
    async def open(cls, settings: Settings, store: Store | None, clock: Clock) -> ChannelPolicies:
        stored: dict[str, Mapping[str, Any]] = {}
        if store is not None:
            for row in await store.policies.all():
                try:  # a row this version refuses is left out (and `kuuki doctor` names it)
                    changed(ChannelPolicy(), row.values, f"channel {row.channel_id}")
                except ConfigError as exc:
                    log.warning("stored policy left out: %s", exc)
                    continue
                stored[row.channel_id] = row.values
        return cls(PolicyBook(settings.channel_policy, stored), store, clock)

    def of(self, channel: Channel) -> ChannelPolicy:
        return self.book.of(channel)

    def listens_only(self, channel: Channel) -> bool:
        return self.book.listens_only(channel)

    async def change(
        self, channel: Channel, values: Mapping[str, Any], by: User
    ) -> ChannelPolicy:
        """Lay ``values`` over the channel's policy and keep them (ConfigError names a bad
        key, and nothing changes)."""
        policy = self.book.set(channel, values)
        await self._keep(channel, by)
        return policy

    async def reset(self, channel: Channel, by: User) -> ChannelPolicy:
        """Back to kuuki.toml's policy for the channel."""
        policy = self.book.reset(channel)
        await self._keep(channel, by)
        return policy

    async def _keep(self, channel: Channel, by: User) -> None:
        if self.store is None:
            return
        owner = self.book.owner(channel)
        await self.store.policies.save(owner, self.book.stored.get(owner, {}), by.id,
                                       self.clock.now())
