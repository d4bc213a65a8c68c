"""The privacy rule, in one place: which memories a prompt for a channel may hold.

A prompt rendered for channel X may show memories whose source is X itself, or a public
channel of X's workspace — never a DM or a private channel other than X. Every memory and
fact carries the visibility and workspace of its source; the registry's current view of
the source channel is consulted too, so a channel that has since turned private stops
sharing at once. Anything unknown fails closed.
"""

from __future__ import annotations

from collections.abc import Mapping

from kuuki.domain import Channel, Visibility


class ChannelRegistry:
    """What the memory layer knows about channels (from the store and from observing)."""

    def __init__(self) -> None:
        self._channels: dict[str, Channel] = {}

    def add(self, channel: Channel) -> None:
        self._channels[channel.id] = channel

    def get(self, channel_id: str | None) -> Channel | None:
        return None if channel_id is None else self._channels.get(channel_id)

    def all(self) -> list[Channel]:
        return list(self._channels.values())

    def as_mapping(self) -> Mapping[str, Channel]:
        return self._channels


def may_show(
    target: Channel,
    *,
    source_channel_id: str | None,
    visibility: Visibility,
    workspace: str,
    registry: ChannelRegistry | None = None,
) -> bool:
    """True when a memory from this source may appear in a prompt for ``target``."""
    if source_channel_id is not None and source_channel_id == target.id:
        return True
    if visibility is not Visibility.PUBLIC or workspace != target.workspace:
        return False
    if registry is not None and source_channel_id is not None:
        known = registry.get(source_channel_id)
        # The stricter of the stored and the current visibility wins.
        if known is None or known.visibility is not Visibility.PUBLIC:
            return False
        if known.workspace != target.workspace:
            return False
    return True


def may_show_channel(target: Channel, source: Channel | None) -> bool:
    """The rule for a memory identified only by its source channel."""
    if source is None:
        return False
    if source.id == target.id:
        return True
    return source.visibility is Visibility.PUBLIC and source.workspace == target.workspace
