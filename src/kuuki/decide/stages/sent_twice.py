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

An earlier copy the bot decided to leave alone does not make a double: the person may be
asking again because nobody answered, and the second copy is judged as any message.
"""

from __future__ import annotations

import unicodedata
from collections import deque
from datetime import datetime, timedelta

from kuuki.decide.types import Case, Pass, StageResult
from kuuki.domain import ActionKind, Decision, Stage, Verdict

DOUBLE_WINDOW = timedelta(minutes=2)
_ANSWERS = (ActionKind.REPLY, ActionKind.ACK, ActionKind.REACT)
_MAX_KEPT = 256  # answered messages remembered per channel (pruned by the window anyway)
_MAX_CHANNELS = 4096


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
        for m in reversed(s.recent):
            if m.id == msg.id or m.user.id != msg.user.id or m.ts > msg.ts:
                continue
            if msg.ts - m.ts > DOUBLE_WINDOW:
                break
            owed = m.id in case.awaiting
            if (owed or m.id in answered) and same_text(m.text) == key:
                return self._double(case, m.id, (msg.ts - m.ts).total_seconds(), owed)
        return StageResult.passing()

    @staticmethod
    def _double(case: Case, first: str, gap_s: float, owed: bool) -> StageResult:
        how = "its answer is still to come" if owed else "the bot answered it"
        case.trace.step(f"sent twice: the same as {first}, {gap_s:.0f} s earlier ({how}); "
                        f"answered once")
        stage = Stage.ADDRESSED if case.addressing else Stage.LOCAL
        verdict = Verdict(ActionKind.NONE, stage, 0, f"sent twice: same as {first}",
                          duplicate_of=first)
        return StageResult.decide(verdict, duplicate_of=first, gap_s=round(gap_s, 1),
                                  pending=owed)

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
