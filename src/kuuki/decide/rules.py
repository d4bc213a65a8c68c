"""The local stage's score: the learned seat model's output plus the bot's documented
modesty policy, 0–100, every point in the trace.

Whether a member in the bot's seat would speak now is learned from real group chats
(kuuki.decide.models.seat, with who the message is for from kuuki.decide.models.addressee):
answering
someone who answered you, picking up a question put to you by context, and staying out
of an exchange between others come from data. What stays typed by hand is policy, not a
reading of the room: the bot is a guest, not the most talkative member (a cooldown after
it spoke, its share of the channel, a per-person limit), the persona's area (its
keywords), taking up a question nobody answered for minutes when it is in that area (then
without asking a model; but not one several people ask about their own plan: "who's
booking?"), good
news a friend would at least smile at, and the conversation's state (an ending is a
veto). Each term is `trace.add(rule, points, detail)`; docs/decisions.md ("Issue 25")
lists them with their points. The loop guard and quiet mode are stages of their own
(kuuki.decide.stages.filter).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from kuuki.conversation import cues
from kuuki.decide.addressing.names import normalise
from kuuki.decide.addressing.reading import SEAT, Reading
from kuuki.decide.area import Area
from kuuki.decide.judge.history import TriggerLedger
from kuuki.decide.judge.state import ConvState, StateResult
from kuuki.decide.models.addressee import ROOM
from kuuki.decide.models.words import words
from kuuki.decide.phrases import GOOD_NEWS, GROUP_PLAN, GROUP_WORDS, HELP_OPENER, asks, musing
from kuuki.decide.situation import Situation
from kuuki.decide.tracking import ChannelView
from kuuki.domain import DecisionTrace
from kuuki.settings import Settings

ENGAGEMENT = timedelta(minutes=5)
COOLDOWN = timedelta(minutes=2)
PRESENCE_WINDOW = 20
MONOLOGUE_RUN = 3  # this many turns of one person in a row, nobody else between: to oneself
MONOLOGUE_WINDOW = timedelta(minutes=10)
TURN_GAP = timedelta(seconds=45)  # lines closer than this are one turn
USER_LIMIT = 3  # bot actions one person may trigger per USER_LIMIT_WINDOW without asking
USER_LIMIT_WINDOW = timedelta(minutes=10)
# Policy points (docs/decisions.md, "Issue 25": the modesty policy on top of the seat model)
COOLDOWN_POINTS = -50
KEYWORDS = 15
OPEN_QUESTION = 15  # answering questions put to the room is what the persona is there for
GOOD_NEWS_POINTS = 50
SILENCE = timedelta(minutes=10)
SILENCE_POINTS = 10
UNANSWERED = 45
AREA_UNANSWERED = 10  # with OPEN_QUESTION, KEYWORDS and UNANSWERED: past the high threshold
PLAN_PEOPLE = 3  # this many people (the bot not counted) settling something between them
PLAN_WINDOW = timedelta(minutes=10)


@dataclass(slots=True)
class LocalResult:
    """What the local stage found out, beyond the score (which lives in the trace)."""

    score: float = 0.0
    addressed: str = ""
    question: bool = False
    open_question: bool = False
    engaged: bool = False
    from_bot: bool = False
    unanswered: bool = False
    short: bool = False  # a few words: a remark, not something to answer at length
    seat_p: float = 0.0
    seat_short: float = 0.0
    state: StateResult | None = None
    veto: str = ""

    @property
    def conflict(self) -> bool:
        return self.state is not None and self.state.state is ConvState.CONFLICT


class RuleScorer:
    """Scores one message for one persona; holds no per-channel state itself."""

    def __init__(self, settings: Settings, ledger: TriggerLedger) -> None:
        self.settings = settings
        self.persona = settings.persona
        self.ledger = ledger
        self._persona_keywords = tuple(self.persona.keywords)
        self.area = Area(self._persona_keywords)

    def score(
        self,
        s: Situation,
        view: ChannelView,
        trace: DecisionTrace,
        state: StateResult,
        reading: Reading,
        *,
        unanswered: bool | None = None,
        keywords: tuple[str, ...] | None = None,
        readiness: int = 0,
    ) -> LocalResult:
        r = LocalResult(state=state)
        msg = s.message
        text = "\n".join(m.text for m in view.burst())
        r.from_bot = msg.user.is_bot
        r.short = len(text.split()) <= 6 if text.isascii() else len(text) <= 20
        r.seat_p, r.seat_short = reading.seat.p, reading.seat.short
        r.question = any(asks(line) for line in text.splitlines())
        if state.state is ConvState.CONFLICT and r.question:
            r.question = False  # questions thrown in a quarrel are rhetorical
        seat_points = self._seat(reading, trace)
        if s.addressing:
            r.addressed = s.addressing.kind
            if r.addressed == "context":
                points = max(seat_points, round(100 * reading.bot_p, 1))
                trace.add("addressed:context", points, s.addressing.detail)
            else:
                points = 80 if r.addressed in ("name", "thread") else 100
                trace.add(f"addressed:{r.addressed}", points, s.addressing.detail)
        else:
            why = ", ".join(f"{words(n)} {v:+.1f}" for n, v in reading.seat.top[:3])
            trace.add("seat model", seat_points,
                      f"a member in this seat speaks: {reading.seat.p:.0%} ({why})"
                      if reading.read else "not run: the bot is not part of this talk")
            to = reading.addressee.to
            area = self._persona_keywords if keywords is None else keywords
            self._open_question(s, view, text, reading, trace, r, area)
            self._engagement(s, view, trace, r)
            in_area = self._keywords(text, trace, area)
            if readiness:
                trace.add("channel readiness", readiness, "this channel's policy")
            if GOOD_NEWS.found_in(text) and not r.question and to in (ROOM, SEAT):
                self._good_news(s, view, trace)
            busy = self._presence(s, trace)
            self._user_limit(s, trace)
            if r.from_bot:
                trace.add("author is a bot", -30, msg.user.name)
            if unanswered and r.open_question and busy:
                trace.step("an unanswered question, but the bot did much of the talking here")
            elif unanswered and r.open_question:
                self._unanswered(s, trace, r, in_area)
        self._state(trace, r, state)
        r.score = trace.score
        return r

    def _open_question(
        self, s: Situation, view: ChannelView, text: str, reading: Reading,
        trace: DecisionTrace, r: LocalResult, area: tuple[str, ...],
    ) -> None:
        """Put to the room: the addressee model says so, or the text does ("anyone…",
        "誰か…"); never when it calls someone else by name ("dave, did you push?"), nor a
        question to oneself, nor one among several people about their own plan."""
        r.open_question = (
            r.question and not r.from_bot
            and (reading.addressee.to in (ROOM, SEAT) or cues.to_the_room(text))
            and not self._calls_someone_else(s.message.text)
        )
        musing = self._talking_to_oneself(s, text) if r.open_question else ""
        if musing == "musing" and HELP_OPENER.found_in(text) and self.area.found(text, area):
            trace.step("a help question in the persona's area, question mark left out: "
                       "put to the room, not musing")
            musing = ""
        if musing:
            trace.add("talking to oneself", 0, f"{musing}: not a question to take up")
            r.open_question = False
        plan = self._their_own_plan(s, view, text, area) if r.open_question else ""
        if plan:
            trace.add("their own plan", 0, plan)
            r.open_question = False
        if r.open_question:
            trace.add("question to the room", OPEN_QUESTION,
                      f"the addressee model: for the room {reading.addressee.of(ROOM):.0%}")

    def _their_own_plan(
        self, s: Situation, view: ChannelView, text: str, area: tuple[str, ...]
    ) -> str:
        """A question among several people settling their own plan ("who's booking?" in
        four colleagues' lunch plan) is theirs: no member takes it up for them, even when
        nobody answers it in words for minutes. It is one when it asks about the group
        ("we", "us", "who's…", 「誰が」, 「私たち」, 「集合」…), at least PLAN_PEOPLE people
        (the asker among them, who had already spoken) talk in the channel within
        PLAN_WINDOW, and it is outside the persona's area (no keyword: nothing the bot knows
        better than they do). A question in the bot's area, a newcomer's, one in a talk of
        two, and a help question ("how can i disable ipv6?": a few words, but nothing about
        the group) stay the room's. Why, in words, or "" when it is not such a question."""
        msg = s.message
        about = GROUP_PLAN.find(text)
        if about is None or self.area.found(text, area):
            return ""
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        # The channel's lines, not the tracker's conversation: a plan's short lines ("ok",
        # "me too") are where the disentangler is least sure.
        talk = [m for m in s.recent if m.ts <= msg.ts and msg.ts - m.ts <= PLAN_WINDOW
                and not m.user.is_bot and m.user.id not in bot_ids]
        people = {m.user.id for m in talk}
        first = view.burst()[0].ts
        spoke = any(m.user.id == msg.user.id and m.ts < first for m in talk)
        if len(people) < PLAN_PEOPLE or not spoke:
            return ""
        return (f"{len(people)} people settle it among themselves, it asks about the group "
                f"(«{about}»), nothing in the persona's area: theirs to answer, not a question "
                "to take up")

    # -- the seat model and the policy terms ---------------------------------------------------

    @staticmethod
    def _seat(reading: Reading, trace: DecisionTrace) -> float:
        seat = reading.seat
        points = round(100 * seat.p, 1)
        if not reading.read:
            return points
        trace.features["seat"] = {
            "p": round(seat.p, 3), "short": round(seat.short, 3), "score": points,
            "top": [[words(n), round(v, 2)] for n, v in seat.top[:4]],
            "content": [[words(n), v] for n, v in seat.content],
            "against": [[words(n), round(v, 2)] for n, v in seat.against[:3]],
        }
        return points

    def _engagement(
        self, s: Situation, view: ChannelView, trace: DecisionTrace, r: LocalResult
    ) -> None:
        """The cooldown after the bot spoke, and whether it is part of this conversation
        (an engagement: exempt from the intervention interval, answered in full)."""
        bot = s.bot
        if bot is None or bot.last_reply_at is None:
            return
        since = s.now - bot.last_reply_at
        if since <= COOLDOWN:
            trace.add("cooldown", COOLDOWN_POINTS, f"replied {since.total_seconds():.0f} s ago")
        if since > ENGAGEMENT or bot.last_reply_conversation is None:
            return
        answer = view.same_conversation(bot.last_reply_conversation, s.message.id)
        if answer is not None and answer[0]:  # the tracker places it in that conversation
            r.engaged = True
            trace.step(f"engaged: the bot replied {since.total_seconds() / 60:.1f} min ago here")

    def _calls_someone_else(self, text: str) -> str:
        """A name the question calls (`cues.called_in_question`, as the tracker's list of
        open questions reads it) that is not the bot's nor the room's (みなさん…)."""
        called = cues.called_in_question(text)
        return next((c for c in called if not cues.calls_name(c, self.persona.names)
                     and normalise(c) not in GROUP_WORDS), "")

    @staticmethod
    def _talking_to_oneself(s: Situation, text: str) -> str:
        """Seed 003's obvious monologue: a question the persona should not take up. Musing
        ("今日も残業かな", no question mark), a self-question ("…せいか？", "I wonder"), or the
        author's third turn in a row with nobody else in the talk; never when the text puts
        something to the room ("anyone…", "誰か…", polite forms)."""
        if cues.to_the_room(text):
            return ""
        if musing(text):
            return "musing"
        msg = s.message
        turns, last = 1, msg.ts
        for m in reversed([m for m in s.recent if m.ts <= msg.ts and m.id != msg.id]):
            if msg.ts - m.ts > MONOLOGUE_WINDOW or m.user.id != msg.user.id:
                break
            if last - m.ts > TURN_GAP:
                turns += 1
            last = m.ts
        return "a run of lines nobody else is part of" if turns >= MONOLOGUE_RUN else ""

    @staticmethod
    def _good_news(s: Situation, view: ChannelView, trace: DecisionTrace) -> None:
        """Good news a friend answers: with a word when it is told to the room, and more
        so when it ends a silence; with an emoji when it closes a run of one's own lines
        (narrating one's progress, nobody else between)."""
        msg, bot_ids = s.message, (s.bot.user_ids if s.bot else frozenset())
        people = [m for m in s.recent if m.ts <= msg.ts and m.id != msg.id
                  and m.user.id not in bot_ids and msg.ts - m.ts <= MONOLOGUE_WINDOW]
        run = 1
        for m in reversed(people):
            if m.user.id != msg.user.id:
                break
            run += 1
        if run >= 2:
            trace.add("good news", GOOD_NEWS_POINTS - 20, "the end of a run of one's own lines")
            return
        trace.add("good news", GOOD_NEWS_POINTS, "shared with the room")
        first = view.burst()[0]
        before = [m for m in s.recent if m.ts < first.ts]
        if before and first.ts - before[-1].ts >= SILENCE:
            trace.add("breaks a silence", SILENCE_POINTS, "news after 10 min or more of quiet")

    def _keywords(self, raw: str, trace: DecisionTrace, keywords: tuple[str, ...]) -> list[str]:
        found = self.area.found(raw, keywords)
        if found:
            trace.add("keywords", KEYWORDS, ", ".join(found[:5]))
        return found

    def _unanswered(
        self, s: Situation, trace: DecisionTrace, r: LocalResult, in_area: list[str]
    ) -> None:
        """Still open on the re-check, minutes later. In the persona's area that is help
        somebody is waiting for and the persona is there to give: a clear decision
        (AREA_UNANSWERED takes a plain question to the room there past the high
        threshold), not one to ask a model about; the cooldown, presence and per-person
        terms still hold it back when the bot has been talking."""
        r.unanswered = True
        age = (s.now - s.message.ts).total_seconds() / 60
        trace.add("open question unanswered", UNANSWERED, f"nobody answered for {age:.0f} min")
        if in_area:
            trace.add("unanswered, in its area", AREA_UNANSWERED,
                      f"a question about {', '.join(in_area[:3])} nobody took up: what the "
                      "persona is there for")

    def _presence(self, s: Situation, trace: DecisionTrace) -> bool:
        """The bot's share of the channel's recent messages, against its fair share among
        the people talking (1/n of the n authors, the bot included): a guest does not
        become the most talkative member, but in a three-person chat writing a third is
        no more than each member does. True when it did much of the talking (then it
        leaves even an unanswered question to the members)."""
        window = list(s.recent)[-PRESENCE_WINDOW:]
        if len(window) < 5:
            return False
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        mine = sum(1 for m in window if m.user.id in bot_ids)
        share = mine / len(window)
        authors = len({"bot" if m.user.id in bot_ids else m.user.id for m in window})
        some, much = max(0.25, 1.25 / authors), max(0.4, 1.5 / authors)
        if share >= much:
            trace.add("presence", -30, f"the bot wrote {mine} of the last {len(window)}")
        elif share >= some:
            trace.add("presence", -10, f"the bot wrote {mine} of the last {len(window)}")
        return share >= much

    def _user_limit(self, s: Situation, trace: DecisionTrace) -> None:
        n = self.ledger.count(s.channel.id, s.message.user.id, s.now, USER_LIMIT_WINDOW)
        if n >= USER_LIMIT:
            trace.add("user rate limit", -30, f"{s.message.user.name} triggered {n} in 10 min")

    @staticmethod
    def _state(trace: DecisionTrace, r: LocalResult, st: StateResult) -> None:
        trace.features["state"] = {
            "state": st.state.value,
            "confidence": round(st.confidence, 2),
            "source": st.source,
            "detail": st.detail,
        }
        if st.state is ConvState.ENDING and not r.addressed:
            trace.add("state:ending", -100, f"confidence {st.confidence:.2f}")
            r.veto = r.veto or "the conversation is ending"
        elif st.state is ConvState.MISUNDERSTANDING and not r.addressed:
            trace.add("state:misunderstanding", 10, "a member could help clear it up")
        elif st.state is ConvState.CONFLICT:
            trace.add("state:conflict", 0, "no emoji or short ack in a conflict")

