"""The `own` stage, first in every trace: the bot's own message is never answered.

The engine does not run the list for its own messages (kuuki.engine.filter decides whose
messages are the bot's), so this decides only for callers that judge a bare situation (a
`Judge`, the playground).
"""

from __future__ import annotations

from kuuki.decide.types import MESSAGE_PASSES, Case, StageResult
from kuuki.domain import ActionKind, Stage, Verdict


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
