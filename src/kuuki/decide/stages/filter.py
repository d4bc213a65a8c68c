"""The `filter` stage: the loop guard against other bots, the DM policy's and empty messages'
silence. Whether a channel is listened to at all (allow/deny lists) is the engine's step 1
(kuuki.engine.filter).
"""

from __future__ import annotations

from kuuki.decide.types import MESSAGE_PASSES, Case, StageResult
from kuuki.domain import Stage, Visibility
from kuuki.settings import Settings

LOOP_GUARD_TURNS = 2  # bot turns since the last human message before another bot is ignored


class Filter:
    """DMs when they are off, empty messages, and the loop guard: another bot is ignored
    after LOOP_GUARD_TURNS bot turns with no human in between."""

    name = "filter"
    passes = MESSAGE_PASSES

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def run(self, case: Case) -> StageResult:
        s = case.situation
        msg = s.message
        if s.channel.visibility is Visibility.DM and not self.settings.dms_enabled:
            return StageResult.silent(Stage.FILTERED, 0, "DMs are off")
        if msg.user.is_bot:
            turns = self.bot_turns(case)
            if turns >= LOOP_GUARD_TURNS:
                return StageResult.silent(
                    Stage.FILTERED, 0, "loop guard: two bot turns since the last human message",
                    bot_turns=turns,
                )
            return StageResult.passing(bot_turns=turns)
        if not msg.text.strip():
            return StageResult.silent(Stage.FILTERED, 0, "empty message")
        return StageResult.passing()

    @staticmethod
    def bot_turns(case: Case) -> int:
        """Bot messages (any bot, this one included) since the last human one, before it."""
        s = case.situation
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        turns = 0
        for m in reversed([m for m in s.recent if m.id != s.message.id and m.ts <= s.message.ts]):
            if not (m.user.is_bot or m.user.id in bot_ids):
                break
            turns += 1
        return turns
