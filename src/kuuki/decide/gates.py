"""The first stages: the bot's own messages, the filters, and quiet mode.

Each rule here lives only here: the loop guard against other bots, the DM policy's and
empty messages' silence, and quiet mode (also for proactive talk, which runs through the
same list). Whether a channel is listened to at all (allow/deny lists) and whose messages
are the bot's own is the engine's step 1 (kuuki.engine.filter): the engine does not run
the list for its own messages, so `OwnMessage` decides only for callers that judge a bare
situation (a `Judge`, the playground); it keeps its place, first, in every trace.
"""

from __future__ import annotations

from kuuki.decide.types import ALL_PASSES, MESSAGE_PASSES, Case, StageResult
from kuuki.domain import ActionKind, Stage, Verdict, Visibility
from kuuki.settings import Settings

LOOP_GUARD_TURNS = 2  # bot turns since the last human message before another bot is ignored


class OwnMessage:
    """The bot's own messages join the timeline; there is nothing to decide about them."""

    name = "own"
    passes = MESSAGE_PASSES

    async def run(self, case: Case) -> StageResult:
        s = case.situation
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        if s.message.user.id in bot_ids:
            # log=False: no decision is stored about the bot's own message
            return StageResult.decide(
                Verdict(ActionKind.NONE, Stage.FILTERED, 0, "own message", log=False)
            )
        return StageResult.passing()


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


class Quiet:
    """`/kuuki quiet`: silent unless addressed, proactive talk included."""

    name = "quiet"
    passes = ALL_PASSES

    async def run(self, case: Case) -> StageResult:
        s = case.situation
        until = s.bot.quiet_until if s.bot else None
        if until is None or s.now >= until or case.addressing:
            return StageResult.passing()
        case.trace.step(f"quiet in this channel until {until.isoformat()}")
        return StageResult.silent(
            Stage.FILTERED, 0, "asked to be quiet here", until=until.isoformat()
        )
