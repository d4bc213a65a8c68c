"""Who is who in a channel, and whom a message addresses.

Speakers get small integer ids (so the feature code can compare whole windows at once);
every name a speaker goes by (IRC nick, platform user id, display name, a bot's
nicknames) is an alias of that id. Addressing is read from the text (``nick: …``,
``@name``, ``名前さん``, nicks anywhere) and from the platform's mention list.
"""

from __future__ import annotations

from collections.abc import Sequence

from kuuki.conversation import cues

NOBODY: frozenset[int] = frozenset()  # the ids a message names when it names no one


class Speakers:
    """Alias table: case-folded name -> speaker id."""

    def __init__(self) -> None:
        self._alias: dict[str, int] = {}
        self._names: list[str] = []

    def id(self, name: str, aliases: Sequence[str] = ()) -> int:
        """Id of ``name`` (registered on first sight); ``aliases`` are added if unclaimed."""
        key = name.casefold()
        sid = self._alias.get(key)
        if sid is None:
            sid = len(self._names)
            self._names.append(name)
            self._alias[key] = sid
        for a in aliases:
            if a:
                self._alias.setdefault(a.casefold(), sid)
        return sid

    def name(self, sid: int) -> str:
        return self._names[sid]

    def resolve(self, name: str, *, allow_prefix: bool) -> int:
        """Speaker id of a called name, or -1. A prefix (3+ chars) counts when unique,
        because IRC users often shorten nicks (``yoh: …`` for ``yohannes``)."""
        key = name.casefold()
        sid = self._alias.get(key)
        if sid is not None:
            return sid
        if allow_prefix and len(key) >= 3:
            hits = {s for a, s in self._alias.items() if a.startswith(key)}
            if len(hits) == 1:
                return hits.pop()
        return -1

    def addressing(
        self, text: str, mentions: Sequence[str] = (), system: bool = False
    ) -> tuple[int, frozenset[int]]:
        """(id of the speaker the message opens with or -1, ids of every speaker it names)."""
        if system:
            return -1, NOBODY
        named: set[int] = set()
        for tok in cues.nick_tokens(text):
            sid = self._alias.get(tok)
            if sid is not None:
                named.add(sid)
        for name in (*mentions, *cues.at_mentions(text), *cues.honorific_names(text)):
            sid = self.resolve(name, allow_prefix=False)
            if sid >= 0:
                named.add(sid)
        lead = -1
        called = cues.leading_addressee(text)
        if called is not None:
            lead = self.resolve(called, allow_prefix=True)
        if lead < 0:
            first = text.split(None, 1)
            if first:
                lead = self._alias.get(first[0].strip("@:,").casefold(), -1)
        if lead < 0 and mentions:
            lead = self.resolve(mentions[0], allow_prefix=False)
        if lead >= 0:
            named.add(lead)
        # most messages name no one: one shared empty set (the history keeps one a row)
        return lead, frozenset(named) if named else NOBODY
