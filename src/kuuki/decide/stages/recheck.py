"""The `recheck` stage: on a re-check, stop if the bot spoke in the conversation since, or the
tracker lists no open question to the room there (never claimed as "answered" then).
"""

from __future__ import annotations

from kuuki.decide.stages.common import RECHECK_S, view_of
from kuuki.decide.types import Case, Pass, StageResult
from kuuki.domain import Stage


class RecheckGate:
    name = "recheck"
    passes = frozenset({Pass.RECHECK})

    async def run(self, case: Case) -> StageResult:
        if not case.ambient:
            return StageResult.passing()
        s = case.situation
        msg = s.message
        view = view_of(case)
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        cid = view.conversation_id
        for m in s.recent:
            if (
                m.user.id in bot_ids
                and m.ts >= msg.ts
                and (m.reply_to == msg.id or cid is None or view.conversation_of(m.id) == cid)
            ):
                case.trace.step("recheck: the bot has spoken in this conversation since")
                return StageResult.silent(Stage.LOCAL, 0, "already answered by the bot")
        age = (s.now - msg.ts).total_seconds()
        open_ = view.unanswered(s.now, min(age, RECHECK_S) - 1, bot_ids)
        case.trace.features["unanswered"] = open_
        if open_ is False:
            # Not "answered by someone else": the answered stage found nobody's answer. The
            # tracker no longer counts it as a question to the room (said to someone, or
            # its model placed a later line as the answer).
            case.trace.step("recheck: the tracker lists no open question to the room here")
            return StageResult.silent(Stage.LOCAL, 0, "no open question to the room",
                                      unanswered=False)
        return StageResult.passing(unanswered=open_)
