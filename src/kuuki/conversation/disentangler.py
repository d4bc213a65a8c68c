"""Online conversation disentanglement: pick each new message's reply parent.

For every incoming message the :class:`Disentangler` scores the previous ``window``
messages and the message itself ("starts a new conversation") with the learned model and
links it to the best one. Only earlier messages are used, so it runs message by message
on a live channel as well as over a whole log file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kuuki.conversation.features import FEATURE_NAMES, ChannelFeatures
from kuuki.conversation.history import Post
from kuuki.conversation.ircdata import IrcLine
from kuuki.conversation.model import DisentanglerModel

DEFAULT_WINDOW = 50
# A second reply parent is reported when the model gives it at least this probability.
# Adding a link helps link F when it is right more often than F/2 (~0.39 here); 0.4 was
# chosen on training files, not on dev. Conversation structure uses the first parent only.
SECOND_PARENT = 0.4
# For a message that addresses nobody, the "starts a new conversation" probability is
# scaled by this and the rest renormalised. Wrongly starting a conversation is the
# commonest conversation-level error (dev: 116 messages, against 30 wrongly attached; many
# are unaddressed lines such as "lol" or "then it's in /"), and one such split costs
# the whole conversation its exact match. A message that names someone keeps the model's
# own odds: "Yamada-san, did you buy the new game?" opens a conversation. Chosen on dev
# (docs/decisions.md): 0.55 gave exact-match F 44.0 -> 45.1 at link F 74.2 -> 74.6.
NEW_CONVERSATION_WEIGHT = 0.55
_ADDRESSES = FEATURE_NAMES.index("i_addresses")
_UNRESOLVED = FEATURE_NAMES.index("lead_unresolved")


@dataclass(frozen=True, slots=True)
class Link:
    """The decision for one message (indices are the disentangler's global counter)."""

    index: int
    parent: int  # == index for "starts a new conversation"
    conversation: int
    confidence: float
    also: tuple[int, ...] = ()  # a second parent the message plausibly answers too

    @property
    def parents(self) -> list[int]:
        return [self.parent, *self.also]


class Disentangler:
    """Model + channel state; feed messages in order with :meth:`step`."""

    def __init__(
        self,
        model: DisentanglerModel,
        *,
        window: int = DEFAULT_WINDOW,
        dim: int = 512,
        second_parent: float = SECOND_PARENT,
        new_weight: float = NEW_CONVERSATION_WEIGHT,
    ) -> None:
        self.model = model
        self.second_parent = second_parent
        self.new_weight = new_weight
        self.state = ChannelFeatures(window=window, dim=dim, proj=model.projection(dim))

    def score(self, turn: Post) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Candidate indices (self first) and their link probabilities, state unchanged."""
        cand, x = self.state.features(turn)
        probs = self.model.probabilities(x)
        addressed = x[0, _ADDRESSES] > 0 or x[0, _UNRESOLVED] > 0
        if self.new_weight != 1.0 and len(cand) > 1 and not (addressed or turn.system):
            probs[0] *= self.new_weight
            probs /= np.add.reduce(probs, axis=None)  # probs.sum(), unwrapped
        return cand, probs

    def step(self, turn: Post, *, forced_parent: int | None = None) -> Link:
        """Link ``turn`` to its best parent (or to ``forced_parent``) and record it."""
        cand, probs = self.score(turn)
        return self.decide(turn, cand, probs, forced_parent=forced_parent)

    def decide(
        self,
        turn: Post,
        cand: npt.NDArray[np.int64],
        probs: npt.NDArray[np.float32],
        *,
        forced_parent: int | None = None,
    ) -> Link:
        """:meth:`step` for a caller that already has ``score(turn)``'s output."""
        if (
            forced_parent is None
            and turn.reply_to is not None
            and self.state.offset <= turn.reply_to < self.state.n
        ):
            # a platform reply reference is ground truth, whatever the model thinks
            forced_parent = turn.reply_to
        if forced_parent is not None:
            parent = forced_parent
            hit = np.flatnonzero(cand == parent)
            conf = float(probs[hit[0]]) if len(hit) else 1.0
        also: tuple[int, ...] = ()
        if forced_parent is None:
            order = (-probs).argsort()
            best = int(order[0])
            parent, conf = int(cand[best]), float(probs[best])
            if (
                len(order) > 1
                and best != 0
                and order[1] != 0
                and probs[order[1]] >= self.second_parent
            ):
                also = (int(cand[order[1]]),)
        conv = self.state.commit(turn, parent)
        return Link(int(cand[0]), parent, conv, conf, also)


def irc_turn(line: IrcLine, minute: float, vector: npt.NDArray[np.float32] | None) -> Post:
    return Post(
        speaker=line.speaker, text=line.text, minute=minute, vector=vector, system=line.system
    )


def irc_minutes(lines: Sequence[IrcLine]) -> list[float]:
    """Minute of every line from the first date on; system lines take the previous time.

    Lines with a date (``rust 2018-05-29 [21:20:37] …``) count whole days from the first
    date seen; lines without one wrap past midnight when the clock jumps back 12 hours.
    """
    out: list[float] = []
    last = 0.0
    day = 0.0
    first_day: int | None = None
    for ln in lines:
        if ln.minute is not None:
            if ln.day is not None:
                if first_day is None:
                    first_day = ln.day
                m = (ln.day - first_day) * 24 * 60 + ln.minute
            else:
                m = ln.minute + day
                if m < last - 12 * 60:  # the clock went past midnight
                    day += 24 * 60
                    m += 24 * 60
            last = m
        out.append(last)
    return out


def disentangle_lines(
    lines: Sequence[IrcLine],
    vectors: npt.NDArray[np.float32] | None,
    model: DisentanglerModel,
    *,
    window: int = DEFAULT_WINDOW,
) -> list[int]:
    """Parent of every line of a log, processed online in order."""
    return [ps[0] for ps in disentangle_links(lines, vectors, model, window=window)]


def disentangle_links(
    lines: Sequence[IrcLine],
    vectors: npt.NDArray[np.float32] | None,
    model: DisentanglerModel,
    *,
    window: int = DEFAULT_WINDOW,
    second_parent: float = SECOND_PARENT,
    new_weight: float = NEW_CONVERSATION_WEIGHT,
) -> list[list[int]]:
    """Parents of every line (the best one first, maybe a second), processed online."""
    dis = Disentangler(
        model,
        window=window,
        second_parent=second_parent,
        new_weight=new_weight,
        dim=vectors.shape[1] if vectors is not None else 512,
    )
    minutes = irc_minutes(lines)
    return [
        dis.step(irc_turn(ln, minutes[k], vectors[k] if vectors is not None else None)).parents
        for k, ln in enumerate(lines)
    ]


def previous_message_baseline(lines: Sequence[IrcLine]) -> list[int]:
    """The paper's baseline: link to the previous non-system message.

    System lines (joins, quits, nick changes) link to themselves, as the annotators do;
    a message with no earlier real message starts a conversation.
    """
    out: list[int] = []
    prev = -1
    for k, ln in enumerate(lines):
        out.append(k if ln.system or prev < 0 else prev)
        if not ln.system:
            prev = k
    return out
