"""Seed 000's intervention policy: when the bot may speak up unasked again.

After an unasked intervention the bot waits EAVESDROP_MIN_INTERVENTION_INTERVAL_MINUTES
(default 10) before the next; after that, a new intervention needs a different conversation
— asked of the tracker first, of the model only when the tracker is unsure — or, in the
same conversation, a changed situation. Replies inside an engagement (the bot is already
part of the conversation) are not interventions and are exempt.
"""

from __future__ import annotations

from datetime import timedelta

from kuuki.decide.judge.history import InterventionHistory
from kuuki.decide.judge.llm_stage import LLMStage
from kuuki.decide.rules import LocalResult
from kuuki.decide.situation import Situation
from kuuki.decide.tracking import ChannelView, format_log
from kuuki.domain import DecisionTrace

SAME_SURE = 0.6  # below this tracker confidence the model is asked


class InterventionPolicy:
    """The per-channel intervention history and the checks built on it."""

    def __init__(self, min_interval_minutes: float) -> None:
        self.min_interval = timedelta(minutes=min_interval_minutes)
        self.history = InterventionHistory()

    def too_soon(self, s: Situation, r: LocalResult, trace: DecisionTrace) -> str:
        """Seed 000's minimum interval between unasked interventions (engagement exempt)."""
        if r.engaged:
            return ""
        last = self.history.last(s.channel.id, s.now)
        if last is None:
            return ""
        since = s.now - last.at
        trace.features["since_last_intervention_min"] = round(since.total_seconds() / 60, 1)
        if since < self.min_interval:
            trace.step(
                f"last intervention {since.total_seconds() / 60:.1f} min ago "
                f"< {self.min_interval.total_seconds() / 60:.0f} min"
            )
            return "minimum interval since the last intervention"
        return ""

    async def situation_new(
        self, s: Situation, view: ChannelView, trace: DecisionTrace, stage: LLMStage | None
    ) -> bool:
        """Seed 000: a different conversation, or the same one whose situation changed."""
        assert stage is not None
        last = self.history.last(s.channel.id, s.now)
        if last is None:
            return True
        current = format_log(view.conversation()[-5:])
        local = view.same_conversation(last.conversation_id, s.message.id)
        trace.features["same_conversation"] = list(local) if local else None
        if local is not None and local[1] >= SAME_SURE:
            same = local[0]
            trace.step(f"same conversation as the last intervention (tracker): {same}")
        else:
            same = await stage.same_conversation(last.log, current, trace)
        if not same:
            return True
        new_ids = [m.id for m in view.conversation() if m.id not in last.message_ids]
        if not new_ids:
            trace.step("nothing new since the last intervention")
            return False
        return await stage.situation_changed(last.log, current, trace)
