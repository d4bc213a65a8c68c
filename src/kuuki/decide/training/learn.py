"""Training the addressee and seat models: numpy (and LightGBM for the addressee model's
trees), deterministic.

Both are fitted by Newton's method on standardised features with an L2 penalty (convex
problems: the same data gives the same weights, to the bit, on the same machine; on another,
whose sums round differently, the same model within the tolerances the shipped-weights test
states), then stored as weights on the raw features. The addressee model is a
conditional logit over each message's candidates, in two rounds: the first without the
predicted features, the second with the first's predictions of the earlier turns; the
second round's rows and scores are then ranked by trees
(:mod:`kuuki.decide.training.forest`). The seat model is two logistic regressions: does the
seat answer now, and is that answer short.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO, overload

import numpy as np
import numpy.typing as npt

from kuuki.conversation.ircdata import read_annotation, read_ascii, split_files
from kuuki.conversation.mrmp import read_split
from kuuki.decide.models.addressee import AddresseeModel
from kuuki.decide.models.content import rarity_table
from kuuki.decide.models.cues import is_short
from kuuki.decide.models.features import ADDRESSEE_FEATURES, PREDICTED
from kuuki.decide.models.seat import SEAT_FEATURES, SeatModel
from kuuki.decide.models.turns import ROOM, Labelled, Turn, irc_chat, mrmp_chat, strip_leading_nick
from kuuki.decide.training.forest import TREES, rank

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

SILENT = "__silent__"  # a member who never speaks: an extra candidate and seat of every message
SILENT_NAMES = ("しずか",)
WINDOW = 20  # turns before a message whose speakers are live (chosen on dev: decisions.md)
L2 = 1.0


def load_chats(irc: Path | None, mrmp: Path | None, limit: int | None = None) -> list[Labelled]:
    """The chats of an IRC split folder and an MRMP dialogues folder (either may be None)."""
    chats: list[Labelled] = []
    if mrmp is not None:
        chats += [mrmp_chat(d) for d in read_split(mrmp)[:limit]]
    if irc is not None:
        for ascii_path, ann_path in split_files(irc)[:limit]:
            chats.append(irc_chat(ascii_path.name, read_ascii(ascii_path),
                                  read_annotation(ann_path)))
    return chats


@dataclass(slots=True)
class Groups:
    x: FloatArray  # (rows, F)
    starts: IntArray  # first row of each message
    gold: IntArray  # the gold row of each message
    # each message's chat (MRMP's, which have no links, before IRC's; each corpus by name:
    # the order load_chats reads them in), index and copy (0, or 1 for the augmented one)
    keys: list[tuple[bool, str, int, int]]

    def canonical(self) -> Groups:
        """The same messages in the order of their keys, whatever order the chats were
        read in: the trees' bagging draws rows by position, so another order would grow
        other trees (a fit's sums only round differently)."""
        order = sorted(range(len(self.keys)), key=self.keys.__getitem__)
        ends = np.append(self.starts[1:], len(self.x))
        sizes = (ends - self.starts)[order]
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        rows = np.concatenate([np.arange(self.starts[k], ends[k]) for k in order])
        gold = starts + (self.gold - self.starts)[order]
        return Groups(self.x[rows], starts, gold, [self.keys[k] for k in order])


class _Swapped(Sequence[Turn]):
    """A chat with turn ``i`` replaced (an augmented copy of one message)."""

    def __init__(self, base: Sequence[Turn], i: int, turn: Turn) -> None:
        self.base, self.i, self.turn = base, i, turn

    def __len__(self) -> int:
        return len(self.base)

    @overload
    def __getitem__(self, k: int) -> Turn: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[Turn]: ...
    def __getitem__(self, k: int | slice) -> Turn | Sequence[Turn]:
        if isinstance(k, slice):
            raise TypeError("an augmented chat is read turn by turn")
        return self.turn if k == self.i else self.base[k]


def augmented(chat: Labelled, i: int) -> Sequence[Turn] | None:
    """Every tenth labelled message to a person once more as a platform would show it: with
    an @-mention of its addressee (k = 3) or as a reply to the addressee's message (k = 7;
    the gold parent on IRC, the addressee's last message on MRMP). Without them no corpus
    would teach the weights of ``mentions`` and ``parent``. And (k = 1, 5) an IRC message
    that opens with its addressee's nick once more without it: people in a chat app rarely
    write the name, and without these the model leans on the nick (IRC dev with the nicks
    removed: 55 % against 86 %)."""
    label, turn = chat.labels[i], chat.turns[i]
    if label == ROOM or i % 10 not in (1, 3, 5, 7):
        return None
    if i % 10 in (1, 5):
        text = strip_leading_nick(turn.text, chat.names.get(label, (label,)))
        if not chat.answers or text == turn.text:
            return None
        return _Swapped(chat.turns, i, replace(turn, text=text))
    if i % 10 == 3:
        return _Swapped(chat.turns, i, replace(turn, mentions=(label,)))
    said = [j for j in chat.parents.get(i, range(i)) if chat.turns[j].speaker == label]
    if not said:
        return None
    return _Swapped(chat.turns, i, replace(turn, parent=max(said)))


def addressee_groups(model: AddresseeModel, chats: Sequence[Labelled], second: bool,
                     augment: bool = True) -> Groups:
    """Every labelled message whose gold addressee is among its candidates (and, with
    ``augment``, the :func:`augmented` copies). Each has a member who never speaks among
    its candidates (:data:`SILENT`, in ``always``), as the bot is when it is live."""
    xs: list[FloatArray] = []
    starts: list[int] = []
    gold: list[int] = []
    order: list[tuple[bool, str, int, int]] = []
    n = 0
    for chat in chats:
        names = {**chat.names, SILENT: SILENT_NAMES}
        for i in sorted(chat.labels):
            label = chat.labels[i]
            copy = augmented(chat, i) if augment else None
            for c, turns in enumerate((chat.turns,) if copy is None else (chat.turns, copy)):
                keys, x = model.rows(turns, i, names, (SILENT,), second=second)
                if label not in keys:
                    continue
                starts.append(n)
                gold.append(n + keys.index(label))
                xs.append(x)
                order.append((bool(chat.answers), chat.name, i, c))
                n += len(keys)
    if not xs:
        raise ValueError("no labelled message has its addressee among the candidates")
    return Groups(np.concatenate(xs), np.array(starts, np.int64), np.array(gold, np.int64),
                  order)


def _scale(x: FloatArray) -> FloatArray:
    std: FloatArray = x.std(axis=0)
    std[std < 1e-9] = 1.0
    return std


def fit_conditional(g: Groups, l2: float = L2, iters: int = 30) -> FloatArray:
    """Conditional logit weights on raw features (Newton, standardised inside)."""
    std = _scale(g.x)
    z = g.x / std
    group = np.repeat(np.arange(len(g.starts)), np.diff(np.append(g.starts, len(z))))
    w = np.zeros(z.shape[1])

    def loss_probs(w: FloatArray) -> tuple[float, FloatArray]:
        s = z @ w
        s -= np.maximum.reduceat(s, g.starts)[group]
        e = np.exp(s)
        den = np.add.reduceat(e, g.starts)
        p = e / den[group]
        return float(-np.log(p[g.gold]).sum() + 0.5 * l2 * w @ w), p

    loss, p = loss_probs(w)
    for _ in range(iters):
        grad = z.T @ p - z[g.gold].sum(axis=0) + l2 * w
        zp = z * p[:, None]
        m = np.add.reduceat(zp, g.starts)
        h = zp.T @ z - m.T @ m + l2 * np.eye(len(w))
        step = np.linalg.solve(h, grad)
        t = 1.0
        while True:
            new_loss, new_p = loss_probs(w - t * step)
            if new_loss <= loss or t < 1e-4:
                break
            t /= 2
        w, done = w - t * step, loss - new_loss < 1e-7 * max(1.0, abs(loss))
        loss, p = new_loss, new_p
        if done:
            break
    out: FloatArray = w / std
    return out


def fit_logistic(x: FloatArray, y: FloatArray, l2: float = L2, iters: int = 30) -> FloatArray:
    """Logistic regression weights on raw features; column 0 is the bias (not penalised)."""
    std = _scale(x)
    z = x / std
    w = np.zeros(z.shape[1])
    pen = np.full(len(w), l2)
    pen[0] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(z @ w, -30, 30)))
        grad = z.T @ (p - y) + pen * w
        h = (z * (p * (1 - p))[:, None]).T @ z + np.diag(pen + 1e-6)
        step = np.linalg.solve(h, grad)
        w = w - step
        if np.abs(step).max() < 1e-8:
            break
    out: FloatArray = w / std
    return out


def train_addressee(chats: Sequence[Labelled], window: int = WINDOW,
                    out: TextIO | None = None, trees: int = TREES) -> AddresseeModel:
    f = len(ADDRESSEE_FEATURES)
    rarity = rarity_table(t.text for chat in chats for t in chat.turns)
    model = AddresseeModel(np.zeros(f), np.zeros(f), window, rarity)
    g1 = addressee_groups(model, chats, second=False)
    model.first = fit_conditional(g1)
    for k, name in enumerate(ADDRESSEE_FEATURES):
        if name.removeprefix("crowded_") in PREDICTED:
            model.first[k] = 0.0  # (no data: the first round's rows leave them at 0)
    _say(out, f"round 1: {len(g1.starts)} messages, {len(g1.x)} candidate rows")
    g2 = addressee_groups(model, chats, second=True)
    model.second = fit_conditional(g2)
    _say(out, "round 2: done")
    if trees:
        g2 = g2.canonical()
        if len(set(g2.keys)) != len(g2.keys):
            raise ValueError("two chats of the corpora have one name: the trees need an order")
        model.forest = rank(g2.x, g2.x @ model.second, g2.starts, g2.gold, trees)
        _say(out, f"trees: {model.forest.trees} of depth {model.forest.depth}")
    return model




def seat_examples(addressee: AddresseeModel, seat: SeatModel, chats: Sequence[Labelled]
                  ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Rows, "answers now" labels and "the answer is short" labels, one per (message, seat).

    IRC: the seat answers an annotated message when one of its later messages has it as a
    gold parent. MRMP: the seat is the one a labelled message is @-addressed to; the next
    speaker would be a poor label there (the next other speaker is the addressee in only
    55.5 % of the train split's labelled messages, chance being 50 %: people answer in
    parallel fragments), while the @ says whose answer the author expects. Its answer is
    the seat's next message. Every message also has a seat that never spoke, and never
    answers (:data:`SILENT`). The seats are the addressee model's candidates: the live
    participants and anyone named or mentioned.
    """
    rows: list[FloatArray] = []
    ys: list[float] = []
    shorts: list[float] = []
    for chat in chats:
        names = {**chat.names, SILENT: SILENT_NAMES}
        for i in sorted(chat.labels):
            result = addressee.predict(chat.turns, i, names, always=(SILENT,))
            seats = sorted(k for k in result.candidates if k not in (ROOM, SILENT))
            for p in [*seats, SILENT]:
                answer = _answer(chat, i, p)
                rows.append(seat.row(chat.turns, i, p, names, result))
                ys.append(float(answer is not None))
                shorts.append(float(answer is not None and is_short(chat.turns[answer].text)))
            alone = lone(chat, i)
            if alone is not None:
                result = addressee.predict(alone, len(alone) - 1, names, always=(SILENT,))
                rows.append(seat.row(alone, len(alone) - 1, SILENT, names, result))
                ys.append(0.0)
                shorts.append(0.0)
    return np.array(rows), np.array(ys), np.array(shorts)


def lone(chat: Labelled, i: int) -> list[Turn] | None:
    """Every tenth labelled message once more as if its author were alone in the room with
    a member who never spoke (:data:`SILENT`): the window's lines by others left out, and
    with them the replies and mentions that pointed to them.

    That member is then the model's likeliest addressee by elimination, not by anything
    said, and a person in that seat lets a question to the room wait for the others (the
    bot's re-check of an open question takes it up later): no corpus has that room, and
    without it the seat model reads "likeliest addressee" alone as its cue to speak."""
    if i % 10 != 9:
        return None
    author = chat.turns[i].speaker
    start = max(0, i - WINDOW)
    return [replace(t, parent=None, mentions=())
            for t in chat.turns[start:i + 1] if t.speaker == author]


def _answer(chat: Labelled, i: int, seat: str) -> int | None:
    if chat.answers:  # IRC
        return next((k for s, k in chat.answers.get(i, ()) if s == seat), None)
    if chat.labels.get(i) != seat:
        return None
    return next((k for k in range(i + 1, len(chat.turns)) if chat.turns[k].speaker == seat),
                None)


def train_seat(addressee: AddresseeModel, chats: Sequence[Labelled],
               out: TextIO | None = None) -> SeatModel:
    f = len(SEAT_FEATURES)
    seat = SeatModel(np.zeros(f), np.zeros(f), addressee.window)
    x, y, short = seat_examples(addressee, seat, chats)
    seat.w_p = fit_logistic(x, y)
    pos = y > 0
    seat.w_short = fit_logistic(x[pos], short[pos])
    _say(out, f"seat: {len(y)} examples, {int(y.sum())} answers, {int(short.sum())} short")
    return seat


def _say(out: TextIO | None, line: str) -> None:
    if out is not None:
        print(line, file=out, flush=True)
