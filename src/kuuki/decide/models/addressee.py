"""Who is a message for? The learned addressee model.

Every candidate of message ``i`` — the live participants (the distinct speakers of the
``window`` turns before it), anyone its text names or the platform says it mentions, and
every key in ``always`` (the bot), never the author — and :data:`ROOM` (everyone) gets a
linear score of its feature row (:mod:`kuuki.decide.models.features`); a softmax over them is a
conditional logit. Two rounds: the first model's predictions for the earlier turns ("whom
did the author last speak to, whom did this candidate") are features of the second, so a
prediction reads only what a member has seen. The weights are ``addressee.npz`` beside this
module; ``kuuki train addressee`` (:mod:`kuuki.decide.training.learn`) retrains the same model
(tests/decide/training/test_shipped_weights.py states how close is the same).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kuuki.decide.models.content import BUCKETS, ContentCache
from kuuki.decide.models.cues import CueCache
from kuuki.decide.models.features import (
    ADDRESSEE_FEATURES,
    CONTENT_COLUMNS,
    Context,
    addressee_rows,
    context,
    load_weights,
    save_weights,
    shipped_path,
)
from kuuki.decide.models.firstround import Prepared
from kuuki.decide.models.trees import Forest
from kuuki.decide.models.turns import ROOM, Turn
from kuuki.errors import ConfigError

__all__ = ["ROOM", "AddresseeModel", "AddresseeResult"]

WEIGHTS_FILE = "addressee.npz"
TREES = "trees"  # what the trees changed in a score, as a reason beside the features
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class AddresseeResult:
    to: str  # the most likely participant key, or ROOM
    p: float  # its probability
    candidates: dict[str, float]  # every candidate key -> p, ROOM included; sums to 1
    top: tuple[tuple[str, float], ...]  # the features that most raised `to`'s score
    # each candidate's feature row and its contributions (rows in the order of `keys`):
    # read by `moved` and the seat model, never compared
    rows: FloatArray | None = field(default=None, compare=False, repr=False)
    contrib: FloatArray | None = field(default=None, compare=False, repr=False)
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def row(self, key: str) -> FloatArray | None:
        """``key``'s feature row, or None when it was not a candidate."""
        if self.rows is None or key not in self.keys:
            return None
        out: FloatArray = self.rows[self.keys.index(key)]
        return out

    def of(self, key: str) -> float:
        return self.candidates.get(key, 0.0)

    def moved(self, key: str, shown: int = 3) -> tuple[tuple[str, float], ...]:
        """What was said that moved the model toward ``key`` (positive) or away from it
        (negative): the content features' contributions to its score against the other
        candidates' mean, the largest first."""
        if self.contrib is None or key not in self.keys:
            return ()
        k = self.keys.index(key)
        others = np.delete(self.contrib, k, axis=0)
        lift = self.contrib[k] - (others.mean(axis=0) if len(others) else 0.0)
        found = [(ADDRESSEE_FEATURES[f], float(lift[f])) for f in CONTENT_COLUMNS
                 if abs(lift[f]) >= 0.05]
        found.sort(key=lambda kv: -abs(kv[1]))
        return tuple((n, round(v, 2)) for n, v in found[:shown])


class AddresseeModel:
    """Weights on raw (unstandardised) features: ``first`` (no predicted features) and
    ``second`` (with them); ``window`` turns make a participant live."""

    def __init__(self, first: FloatArray, second: FloatArray, window: int,
                 rarity: npt.NDArray[np.float32] | None = None,
                 forest: Forest | None = None) -> None:
        if first.shape != (len(ADDRESSEE_FEATURES),) or second.shape != first.shape:
            raise ConfigError("addressee.weights", "weights do not fit the features")
        if rarity is not None and rarity.shape != (BUCKETS,):
            raise ConfigError("addressee.weights", "the n-gram rarity table has the wrong size")
        self.first, self.second, self.window = first, second, window
        self.rarity, self.forest = rarity, forest
        self.cache = CueCache()
        self.texts = ContentCache(rarity)
        self._prior: dict[tuple[int, tuple[str, ...]], tuple[Turn, dict[str, float]]] = {}
        self.replies = Prepared()  # the first rounds of turns with a parent, by value

    @classmethod
    def shipped(cls, cache: CueCache | None = None) -> AddresseeModel:
        """The weights that ship in the package, loaded anew (a few ms: callers keep the
        model). ``cache``: the turn cues' cache to share with the other model."""
        model = cls.load(shipped_path(WEIGHTS_FILE))
        if cache is not None:
            model.cache = cache
        return model

    @classmethod
    def load(cls, path: Path) -> AddresseeModel:
        z = load_weights(path, "addressee.weights", ADDRESSEE_FEATURES)
        if "rarity" not in z:
            raise ConfigError("addressee.weights", f"{path} has no n-gram rarity table")
        forest = (Forest.of(z, len(ADDRESSEE_FEATURES) + 1)
                  if any(k.startswith("tree_") for k in z) else None)
        return cls(z["first"].astype(np.float64), z["second"].astype(np.float64),
                   int(z["window"]), z["rarity"].astype(np.float32), forest)

    def save(self, path: Path) -> None:
        rarity = self.rarity if self.rarity is not None else np.zeros(BUCKETS, np.float32)
        trees = self.forest.arrays() if self.forest is not None else {}
        save_weights(path, ADDRESSEE_FEATURES, first=self.first, second=self.second,
                     window=np.int64(self.window), rarity=rarity, **trees)

    def boosted(self, x: FloatArray, linear: FloatArray) -> FloatArray:
        """What the trees change in each row's linear score (0 without trees): they rank
        the candidates from the rows and the linear score, and their score replaces it."""
        if self.forest is None:
            return np.zeros(len(x))
        out: FloatArray = self.forest.score(np.column_stack([x, linear])) - linear
        return out

    def predict(self, turns: Sequence[Turn], i: int, names: Mapping[str, Sequence[str]],
                always: Sequence[str] = ()) -> AddresseeResult:
        """Who ``turns[i]`` is for, reading ``turns[:i+1]`` only."""
        if not 0 <= i < len(turns):
            raise IndexError(f"message {i} is not in a sequence of {len(turns)} turns")
        ctx = context(self.cache, turns, i, self.window, names)
        keys = ctx.candidates(always)

        def prior(j: int) -> Mapping[str, float]:
            return self._first(turns, j, names, always)

        x = addressee_rows(ctx, keys, prior, self.texts)
        everyone = [*keys, ROOM]
        # the first round's weights are 0 on the predicted features, so the same rows give
        # its prediction for this turn, which later messages read: kept now, not redone
        self._keep(turns[i], always, everyone, _softmax(x @ self.first))
        return _result(everyone, x, self.second, self)

    def rows(self, turns: Sequence[Turn], i: int, names: Mapping[str, Sequence[str]],
             always: Sequence[str] = (), *, second: bool = True) -> tuple[list[str], FloatArray]:
        """The candidates and their feature rows (training and evaluation)."""
        ctx = Context(turns, i, self.window, self.cache, names)
        keys = ctx.candidates(always)

        def prior(j: int) -> Mapping[str, float]:
            return self._first(turns, j, names, always)

        return [*keys, ROOM], addressee_rows(ctx, keys, prior if second else None, self.texts)

    def _first(self, turns: Sequence[Turn], j: int, names: Mapping[str, Sequence[str]],
               always: Sequence[str]) -> dict[str, float]:
        """The first-round prediction for an earlier turn, kept per turn object."""
        turn = turns[j]
        key = (id(turn), tuple(always))
        hit = self._prior.get(key)
        if hit is not None and hit[0] is turn:
            return hit[1]
        ctx = Context(turns, j, self.window, self.cache, names)
        keys = ctx.candidates(always)
        # a reply is a new Turn in each reading (its parent's index moves): kept by value
        probs = None if turn.parent is None else self.replies.take(ctx, keys, always)
        if probs is None:
            probs = _softmax(addressee_rows(ctx, keys, None, self.texts) @ self.first)
            if turn.parent is not None:
                self.replies.keep(ctx, keys, always, probs)
        return self._keep(turn, always, [*keys, ROOM], probs)

    def _keep(self, turn: Turn, always: Sequence[str], keys: list[str], probs: FloatArray
              ) -> dict[str, float]:
        out = dict(zip(keys, probs.tolist(), strict=True))
        if len(self._prior) >= 4096:
            self._prior.clear()
        self._prior[(id(turn), tuple(always))] = (turn, out)
        return out




def _softmax(s: FloatArray) -> FloatArray:
    e = np.exp(s - s.max())
    out: FloatArray = e / e.sum()
    return out


def _result(keys: list[str], x: FloatArray, w: FloatArray, model: AddresseeModel
            ) -> AddresseeResult:
    contrib = x * w
    linear = contrib.sum(axis=1)
    trees = model.boosted(x, linear)
    probs = _softmax(linear + trees)
    best = int(probs.argmax())
    # what the winner has that the others have less of: its contribution above theirs,
    # and what the trees gave it above the others (the interactions a sum cannot hold)
    others = np.delete(contrib, best, axis=0)
    lift = contrib[best] - (others.mean(axis=0) if len(others) else 0.0)
    lift[x[best] == 0] = 0.0
    reasons = [(ADDRESSEE_FEATURES[k], float(lift[k])) for k in np.argsort(-lift)[:3]]
    rest = np.delete(trees, best)
    reasons.append((TREES, float(trees[best] - (rest.mean() if len(rest) else 0.0))))
    reasons.sort(key=lambda kv: -kv[1])
    top = tuple((n, round(v, 3)) for n, v in reasons[:3] if v > 0)
    return AddresseeResult(keys[best], float(probs[best]),
                           dict(zip(keys, probs.tolist(), strict=True)), top, x, contrib,
                           tuple(keys))
