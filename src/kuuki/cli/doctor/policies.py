"""The channel policy check of `kuuki doctor`: kuuki.toml's `[channels.policy.<channel>]`
tables were checked with the settings; here each table's channel is looked for among the
channels the bot has seen (the store, read only), and each change `/kuuki mode` stored is
checked as start-up checks it. A channel nobody has seen is a warning (a typo, or a channel
the bot has not joined yet), a stored change this kuuki refuses a failure."""

from __future__ import annotations

import difflib

from kuuki.cli.doctor.report import Result, failed, note, passed
from kuuki.domain import Channel
from kuuki.errors import ConfigError, KuukiError
from kuuki.settings import Settings
from kuuki.settings.policy import ChannelPolicy, changed, channel_key
from kuuki.store import Store
from kuuki.store.policies import StoredPolicy


async def check_policies(settings: Settings) -> Result | None:
    """None when no channel has a policy of its own, in the file or the store."""
    channels: list[Channel] = []
    stored: list[StoredPolicy] = []
    try:
        store = await Store.open_to_read(settings.store_url or None)
    except KuukiError:
        store = None  # the store line says why; the tables are still counted below
    if store is not None:
        try:
            channels = await store.roster.channels()
            stored = await store.policies.all()
        finally:
            await store.close()
    tables = settings.channel_policy
    if not tables and not stored:
        return None
    key = settings.key_of("channel_policy")[0]
    for row in stored:
        try:
            changed(ChannelPolicy(), row.values, f"/kuuki mode in {row.channel_id}")
        except ConfigError as exc:
            return failed("channel policy", f"the change stored for channel {row.channel_id} "
                          f"is refused: {exc.key.rsplit('.', 1)[-1]}: {exc.problem}",
                          "set it again with `/kuuki mode` in that channel, or "
                          "`/kuuki mode reset` there")
    summary = f"{len(tables)} in {key}, {len(stored)} changed by /kuuki mode"
    if store is None:
        return passed("channel policy", summary + " (the store could not be read: channels "
                      "not looked for)")
    unseen = _unseen(tables, channels)
    if unseen:
        return note("channel policy", summary + f"; {len(unseen)} not found", *unseen)
    return passed("channel policy", summary + ", every channel found")


def _unseen(tables: object, channels: list[Channel]) -> list[str]:
    known = {channel_key(k) for c in channels for k in (c.id, c.name)}
    names = sorted({channel_key(c.name) for c in channels})
    out = []
    for name in sorted(tables):  # type: ignore[call-overload]
        if name in known:
            continue
        guess = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        hint = f"; did you mean {guess[0]}?" if guess else ""
        out.append(f"no channel {name!r} has been seen by this bot (a typo, or a channel it "
                   f"has not joined yet){hint}")
    return out
