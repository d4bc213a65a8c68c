"""A message sent twice gets one answer.

People send a question again when the first copy seems lost: a mention repeated 3 s
later, an open question to the room posted twice. `SentTwice` finds, among the person's
messages of the last DOUBLE_WINDOW, an earlier copy of the same text (the same letters and
digits: case, width, spaces, punctuation and emoji do not count) that the bot answered or
will answer — one it reacted or replied to, or one whose judgment is still pending (a
settling burst, a held ping, an open question's re-check: ``Case.awaiting``). The copy
sent again is left silent, named in the trace (``duplicate_of``), and its verdict says so
(`Verdict.duplicate_of`): the engine then leaves the earlier copy's pending judgment in
place instead of superseding it, so the double does not cancel the answer to the original.

The same asked again in other words (a synonym, another order, a typo fixed: the rules of
kuuki.decide.stages.rephrased) counts as a copy too, but only while the person cannot have
read an answer: no message of the bot's since the first, or its first one less than
READ_TIME before the copy (the person was retyping while it was posted). Once they could
read it, a question asked again in other words is a new turn: the answer may have missed.
The trace names how it was reworded and the cosine of the two messages' vectors, those the
conversation tracker embedded them with.

An earlier copy the bot decided to leave alone does not make a double: the person may be
asking again because nobody answered, and the second copy is judged as any message.
"""

from __future__ import annotations

import unicodedata
from collections import deque
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import cast

from kuuki.decide.situation import Situation
from kuuki.decide.stages.rephrased import Embed, Rephrasing, rephrased
from kuuki.decide.types import Case, Pass, StageResult
from kuuki.domain import ActionKind, Decision, Message, Stage, Verdict
from kuuki.ports import Tracker

DOUBLE_WINDOW = timedelta(minutes=2)
READ_TIME = timedelta(seconds=15)  # to see the bot's answer and read it
_ANSWERS = (ActionKind.REPLY, ActionKind.ACK, ActionKind.REACT)
_MAX_KEPT = 256  # answered messages remembered per channel (pruned by the window anyway)
_MAX_CHANNELS = 4096


def _words(tracker: Tracker | None) -> Embed | None:
    """The channel embedder's vectors of a few words, if it has one."""
    if tracker is None:
        return None

    def embed(texts: Sequence[str]) -> Sequence[Sequence[float]]:
        vecs = tracker.embed_words(texts)
        if vecs is None:
            raise LookupError("no embedder")
        return cast(Sequence[Sequence[float]], vecs)

    return embed if tracker.embed_words(()) is not None else None


def _similarity(s: Situation, first: Message) -> float | None:
    """Cosine of the two messages' sentence vectors, as the tracker embedded them."""
    if s.tracker is None:
        return None
    u, v = s.tracker.vector_of(first.id), s.tracker.vector_of(s.message.id)
    if u is None or v is None:
        return None
    return round(float(sum(x * y for x, y in zip(u, v, strict=True))), 2)


def same_text(text: str) -> str:
    """What two copies must share: the letters and digits, NFKC and lower-cased."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] in "LN")


class SentTwice:
    """One answer to a message sent twice (module doc)."""

    name = "sent twice"
    passes = frozenset({Pass.FIRST, Pass.CAUGHT_UP})

    def __init__(self) -> None:
        # channel -> (message id, when it was answered), oldest first
        self._answered: dict[str, deque[tuple[str, datetime]]] = {}

    async def run(self, case: Case) -> StageResult:
        s = case.situation
        msg = s.message
        if msg.user.is_bot:
            return StageResult.passing()
        key = same_text(msg.text)
        if not key:
            return StageResult.passing()
        answered = {mid for mid, _ in self._answered.get(s.channel.id, ())}
        bot_since: datetime | None = None  # the bot's first message after the one looked at
        for m in reversed(s.recent):
            if m.id == msg.id or m.ts > msg.ts:
                continue
            if msg.ts - m.ts > DOUBLE_WINDOW:
                break
            if m.id in case.bot_message_ids:
                bot_since = m.ts
            if m.user.id != msg.user.id:
                continue
            owed = m.id in case.awaiting
            if not (owed or m.id in answered):
                continue
            gap_s = (msg.ts - m.ts).total_seconds()
            if same_text(m.text) == key:
                return self._double(case, m.id, gap_s, owed)
            if bot_since is None or msg.ts - bot_since < READ_TIME:
                # no answer they could have read: the same asked in other words counts
                again = rephrased(m.text, msg.text, _words(s.tracker))
                if again is not None:
                    return self._double(case, m.id, gap_s, owed, again, _similarity(s, m))
        return StageResult.passing()

    @staticmethod
    def _double(case: Case, first: str, gap_s: float, owed: bool,
                again: Rephrasing | None = None, similarity: float | None = None
                ) -> StageResult:
        how = "its answer is still to come" if owed else "the bot answered it"
        facts: dict[str, object] = {}
        if again is None:
            said, reason = "the same as", f"sent twice: same as {first}"
        else:
            said, reason = "in other words, the same as", f"sent twice in other words: {first}"
            shown = "" if similarity is None else f", similarity {similarity:.2f}"
            how = f"{again.how}{shown}; {how}"
            facts = {"rephrased": again.how, "similarity": similarity}
        case.trace.step(f"sent twice {said} {first}, {gap_s:.0f} s earlier ({how}); "
                        f"answered once")
        stage = Stage.ADDRESSED if case.addressing else Stage.LOCAL
        verdict = Verdict(ActionKind.NONE, stage, 0, reason, duplicate_of=first)
        return StageResult.decide(verdict, duplicate_of=first, gap_s=round(gap_s, 1),
                                  pending=owed, **facts)

    def sent(self, case: Case, decision: Decision) -> None:
        """Remember messages the bot answered as it meant to (not a fallback)."""
        if (decision.action.kind not in _ANSWERS or decision.decided is not None
                or case.passing is Pass.PROACTIVE):
            return
        s = case.situation
        kept = self._answered.setdefault(s.channel.id, deque(maxlen=_MAX_KEPT))
        kept.append((case.message.id, case.message.ts))
        while kept and s.now - kept[0][1] > DOUBLE_WINDOW:
            kept.popleft()
        if len(self._answered) > _MAX_CHANNELS:  # bounded: forget channels gone quiet
            self._answered = {c: q for c, q in self._answered.items()
                              if q and s.now - q[-1][1] <= DOUBLE_WINDOW}
