"""First-round addressee predictions of the bot's replies, kept by what they say.

The addressee model's second round reads the first round's prediction for earlier turns
(whom the author last spoke to, whom each candidate did), kept per turn object. A turn
that answers another (the bot's own replies) carries its parent as an index into the
reading's list of turns, which moves by one with each message, so it is a new `Turn` in
every reading and its first round was made again by each of the next readings.

:class:`Prepared` keeps such a first round by what the turn says, and hands it to a later
reading only when that reading would compute the very same thing. What the first round
of a turn reads is: the speaker, text and time of it and of each turn of its window; its
own mentions, and its parent as a distance back with that parent's speaker; its
candidates, in order; the names of its author and candidates. All of these are compared;
anything else (a window cut short at the start of the reading's list, an edit, a
deletion, someone named who joined later) is computed as before, so every prediction
keeps its last bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np
import numpy.typing as npt

from kuuki.decide.models.features import Context
from kuuki.decide.models.turns import Turn

FloatArray = npt.NDArray[np.float64]
_Key = tuple[str, str, float | None, tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class _Made:
    window: tuple[Turn, ...]  # the turns before it that the first round read, in order
    parent: tuple[int, str] | None  # how many turns back its parent is, and who wrote it
    keys: tuple[str, ...]  # its candidates, in order (the room left out)
    names: tuple[tuple[str, ...], ...]  # the names of the author and each candidate
    probs: FloatArray


class Prepared:
    """First-round predictions, one per turn as people see it (bounded: a full store is
    emptied, which only means the next readings compute theirs again)."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._made: dict[_Key, _Made] = {}
        self.taken = 0  # first rounds handed to a reading instead of made again

    def __len__(self) -> int:
        return len(self._made)

    def keep(self, ctx: Context, keys: Sequence[str], always: Sequence[str],
             probs: FloatArray) -> None:
        """``probs``: the first round for ``ctx``'s message, its candidates ``keys``."""
        if len(self._made) >= self._size:  # the oldest quarter goes
            for old in list(islice(self._made, max(1, self._size // 4))):
                del self._made[old]
        window = tuple(ctx.turns[j] for j in range(ctx.start, ctx.i))
        self._made[_key(ctx.turn, always)] = _Made(
            window, _parent(ctx), tuple(keys), _names(ctx.names, ctx.author, keys), probs)

    def take(self, ctx: Context, keys: Sequence[str], always: Sequence[str]
             ) -> FloatArray | None:
        """The first round kept for ``ctx``'s message when it read what ``ctx`` reads."""
        made = self._made.get(_key(ctx.turn, always))
        if made is None or made.keys != tuple(keys) or made.parent != _parent(ctx):
            return None
        window, turns, start = made.window, ctx.turns, ctx.start
        if len(window) != ctx.i - start:
            return None
        for k, was in enumerate(window):
            now = turns[start + k]
            if now is not was and (now.speaker != was.speaker or now.text != was.text
                                   or now.ts != was.ts):
                return None
        if made.names != _names(ctx.names, ctx.author, keys):
            return None
        self.taken += 1
        return made.probs


def _key(turn: Turn, always: Sequence[str]) -> _Key:
    return (turn.speaker, turn.text, turn.ts, turn.mentions, tuple(always))


def _parent(ctx: Context) -> tuple[int, str] | None:
    """The message's parent as the first round reads it (kuuki.decide.models.features)."""
    parent = ctx.turn.parent
    if parent is None or parent >= ctx.i:
        return None
    return ctx.i - parent, ctx.turns[parent].speaker


def _names(names: Mapping[str, Sequence[str]], author: str, keys: Sequence[str]
           ) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(names.get(k) or ()) for k in (author, *keys))
