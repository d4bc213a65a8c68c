"""Would a member in this seat speak now, in answer to message ``i``, and how?

Two logistic models on one feature row of the seat (:func:`seat_row`): ``p``, the
probability the seat answers ``turns[i]`` next, and ``short``, given it does, the
probability the answer is a short remark or aizuchi (:func:`kuuki.decide.models.cues.is_short`).
The row reads the addressee model's result for the message (``of(seat)``, ``of(ROOM)``),
the turn-taking around the seat and the message's cues. The weights are ``seat.npz``
beside this module; ``kuuki train seat`` (:mod:`kuuki.decide.training.learn`) retrains the
same model
(tests/decide/training/test_shipped_weights.py states how close is the same).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kuuki.decide.models.addressee import AddresseeResult
from kuuki.decide.models.content import CONTENT_FEATURES
from kuuki.decide.models.cues import LEAD, START, CueCache
from kuuki.decide.models.features import (
    ADDRESSEE_FEATURES,
    PATTERNS,
    SMALL,
    Context,
    context,
    load_weights,
    save_weights,
    shipped_path,
)
from kuuki.decide.models.turns import ROOM, Turn
from kuuki.errors import ConfigError

WEIGHTS_FILE = "seat.npz"
FloatArray = npt.NDArray[np.float64]

_BASE = (
    "bias", "p_to", "p_room", "p_other", "to_is", "log_p_to", "prev_is", "last_other_is",
    "asked", "asked_answer", "since", "never", "share", "question", "greeting", "thanks",
    "you", "live", "length", "author_streak", "named_lead", "named", "parent_is", "gap_prev",
    "ts_known", "p_to_question", "p_room_question", "p_room_greeting",
)
# Turn-taking in a crowded channel is not a small group's (kuuki.decide.features.SMALL):
# those features once more, times "crowded", so the three-person chats of MRMP and the
# busy IRC channels each get their own weights. A name, a reply, having never spoken and
# what was said mean the same in both and keep one weight: in MRMP everyone speaks, so a
# small group's own weight for "never spoke" would be learned from the silent member
# alone, and a member called by name who has not spoken yet would never answer.
_OWN = (*_BASE, *CONTENT_FEATURES, *PATTERNS)
_SHARED = frozenset(("bias", "never", "named_lead", "named", "parent_is", *CONTENT_FEATURES))
_CROWDED = [k for k, n in enumerate(_OWN) if n not in _SHARED]
SEAT_FEATURES = (*_OWN, *(f"crowded_{_OWN[k]}" for k in _CROWDED))
_N = _C0 = len(_BASE)  # the base features, then what was said, then the patterns
_PAT0 = _C0 + len(CONTENT_FEATURES)
_OWN_N = len(_OWN)
_CONTENT_A = ADDRESSEE_FEATURES.index(CONTENT_FEATURES[0])
# what was said (`kuuki why`'s "what was said"), beside who spoke when
CONTENT = frozenset(("asked", "asked_answer", "question", "greeting", "thanks", "you",
                     "p_to_question", "p_room_question", "p_room_greeting", *CONTENT_FEATURES))
_CONTENT_COLUMNS = tuple(k for k, n in enumerate(SEAT_FEATURES)
                         if n.removeprefix("crowded_") in CONTENT)


@dataclass(frozen=True, slots=True)
class SeatResult:
    p: float  # probability that a member in this seat speaks now in answer to turns[i]
    short: float  # given it speaks, probability it is a short remark/aizuchi (ack)
    top: tuple[tuple[str, float], ...]  # top feature contributions to p
    content: tuple[tuple[str, float], ...] = ()  # what was said that moved p, largest first
    against: tuple[tuple[str, float], ...] = ()  # the contributions that held p down most


def seat_row(ctx: Context, seat: str, addressee: AddresseeResult) -> FloatArray:
    x = np.zeros(len(SEAT_FEATURES))
    turn = ctx.turns[ctx.i]
    me = ctx.cache.cues(turn)
    p_to, p_room = addressee.of(seat), addressee.of(ROOM)
    since, never = ctx.since(seat)
    asked = ctx.asked(seat)
    bits = ctx.named(seat)
    parent = turn.parent if turn.parent is not None and turn.parent < ctx.i else None
    gap = ctx.gap(ctx.i - 1 if ctx.i > 0 else None)
    x[:_N] = (
        1, p_to, p_room, max(0.0, 1 - p_to - p_room), addressee.to == seat,
        math.log(max(p_to, 1e-4)), ctx.i > 0 and ctx.turns[ctx.i - 1].speaker == seat,
        ctx.last_other == seat, asked, asked and me.answer, since, never,
        ctx.count.get(seat, 0) / max(1, ctx.i - ctx.start), me.question, me.greeting,
        me.thanks, me.you, math.log1p(len(ctx.last)), me.length,
        ctx.author_last == ctx.i - 1 and ctx.i > 0, bool(bits & (LEAD | START)), bits > 0,
        parent is not None and ctx.turns[parent].speaker == seat, gap or 0.0,
        turn.ts is not None, p_to * me.question, p_room * me.question, p_room * me.greeting,
    )
    row = addressee.row(seat)
    if row is not None:  # what was said, as the addressee model read it for the seat
        x[_C0:_PAT0] = row[_CONTENT_A:_CONTENT_A + len(CONTENT_FEATURES)]
    x[_PAT0 + ctx.pattern(seat)] = 1
    if len(ctx.last) > SMALL:
        x[_OWN_N:] = x[_CROWDED]
    return x


class SeatModel:
    """``w_p`` and ``w_short``: logistic weights on raw :data:`SEAT_FEATURES`."""

    def __init__(self, w_p: FloatArray, w_short: FloatArray, window: int) -> None:
        if w_p.shape != (len(SEAT_FEATURES),) or w_short.shape != w_p.shape:
            raise ConfigError("seat.weights", "weights do not fit the features")
        self.w_p, self.w_short, self.window = w_p, w_short, window
        self.cache = CueCache()

    @classmethod
    def shipped(cls, cache: CueCache | None = None) -> SeatModel:
        """The weights that ship in the package, loaded anew (a few ms: callers keep the
        model). ``cache``: the turn cues' cache to share with the other model."""
        model = cls.load(shipped_path(WEIGHTS_FILE))
        if cache is not None:
            model.cache = cache
        return model

    @classmethod
    def load(cls, path: Path) -> SeatModel:
        z = load_weights(path, "seat.weights", SEAT_FEATURES)
        return cls(z["w_p"].astype(np.float64), z["w_short"].astype(np.float64),
                   int(z["window"]))

    def save(self, path: Path) -> None:
        save_weights(path, SEAT_FEATURES, w_p=self.w_p, w_short=self.w_short,
                     window=np.int64(self.window))

    def row(self, turns: Sequence[Turn], i: int, seat: str, names: Mapping[str, Sequence[str]],
            addressee: AddresseeResult) -> FloatArray:
        return seat_row(context(self.cache, turns, i, self.window, names), seat, addressee)

    def predict(self, turns: Sequence[Turn], i: int, seat: str,
                names: Mapping[str, Sequence[str]], addressee: AddresseeResult) -> SeatResult:
        """The seat's odds of answering ``turns[i]`` now, reading ``turns[:i+1]`` only."""
        if not 0 <= i < len(turns):
            raise IndexError(f"message {i} is not in a sequence of {len(turns)} turns")
        x = self.row(turns, i, seat, names, addressee)
        contrib = x * self.w_p
        p = _sigmoid(float(contrib.sum()))
        short = _sigmoid(float(x @ self.w_short))
        order = np.argsort(-contrib)
        top = tuple((SEAT_FEATURES[k], round(float(contrib[k]), 3))
                    for k in order[:3] if contrib[k] > 0)
        against = tuple((SEAT_FEATURES[k], round(float(contrib[k]), 3))
                        for k in order[::-1][:3] if contrib[k] < 0)
        said = sorted(((SEAT_FEATURES[k], float(contrib[k])) for k in _CONTENT_COLUMNS
                       if abs(contrib[k]) >= 0.05), key=lambda kv: -abs(kv[1]))
        return SeatResult(p, short, top, tuple((n, round(v, 2)) for n, v in said[:3]),
                          against)




def _sigmoid(s: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, s))))


