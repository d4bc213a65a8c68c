"""The `recheck` stage: on a re-check, stop if the bot spoke in the conversation since, or the
tracker lists no open question to the room there (never claimed as "answered" then). For a
question in the persona's area the tracker is overruled when it took a later line for the
answer but every line since is said to someone else, a backchannel or a question of its
own (kuuki.decide.not_an_answer).
"""

from __future__ import annotations

from kuuki.conversation import cues
from kuuki.decide.area import Area
from kuuki.decide.stages.common import RECHECK_S, in_area, view_of
from kuuki.decide.types import Case, Pass, StageResult
from kuuki.domain import Message, Stage


class RecheckGate:
    name = "recheck"
    passes = frozenset({Pass.RECHECK})

    def __init__(self, area: Area) -> None:
        self.area = area

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
            passed: list[str] = []
            if (in_area(case, self.area) and not _said_to_someone(msg)
                    and view.answered_by(bot_ids, passed) is None and passed):
                # The tracker's model placed a later line as the answer, but every later
                # line is said to someone else, a backchannel or a question of its own.
                case.trace.step("recheck: the tracker took a later line for the answer, but "
                                "none of the lines since answers it: still open")
                case.trace.features["unanswered"] = True
                return StageResult.passing(unanswered=True, tracker="overruled")
            # Not "answered by someone else": the answered stage found nobody's answer. The
            # tracker no longer counts it as a question to the room (said to someone, or
            # its model placed a later line as the answer).
            case.trace.step("recheck: the tracker lists no open question to the room here")
            return StageResult.silent(Stage.LOCAL, 0, "no open question to the room",
                                      unanswered=False)
        return StageResult.passing(unanswered=open_)


def _said_to_someone(msg: Message) -> bool:
    """The question itself goes to someone: a platform reply or mention, or a name it calls."""
    return bool(msg.reply_to or msg.mentions or cues.called_in_question(msg.text))
