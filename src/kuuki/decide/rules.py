"""The local stage's rule scorer (seed 002, and past it): 0–100, every point in the trace.

Each rule is a small method that looks at the situation and, when it applies, adds one
contribution (`trace.add(rule, points, detail)`). Rules never call a model; the only
model-ish input is the conversation state, classified beforehand and passed in.
A *veto* (the conversation is ending) means "stay silent whatever the score". The loop
guard and quiet mode are not scores: they are stages of their own (kuuki.decide.gates).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from kuuki.conversation import cues
from kuuki.decide.addressing import AddressDetector, normalise
from kuuki.decide.base import Situation
from kuuki.decide.history import TriggerLedger
from kuuki.decide.phrases import GOOD_NEWS, GROUP_WORDS, ROOM, SELF_TALK, asks
from kuuki.decide.state import ConvState, StateResult
from kuuki.decide.tracking import ChannelView
from kuuki.domain import DecisionTrace, Message
from kuuki.settings import Settings

ENGAGEMENT = timedelta(minutes=5)
COOLDOWN = timedelta(minutes=2)
SILENCE = timedelta(minutes=10)
BURST_WINDOW = timedelta(seconds=60)
BURST_SIZE = 10
CROWD_WINDOW = timedelta(minutes=5)
CROWD_SIZE = 6  # this many people talking at once: a member waits to be asked
MENTION_WINDOW = 10  # "no mention of the bot in the last N messages"
PRESENCE_WINDOW = 20
ENGAGED_SURE = 0.8  # the tracker must be this sure to say "another conversation"
USER_LIMIT = 3  # bot actions one person may trigger per USER_LIMIT_WINDOW without asking
USER_LIMIT_WINDOW = timedelta(minutes=10)

MONOLOGUE_RUN = 3  # this many lines in a row by one person, nobody else between: to oneself
MONOLOGUE_WINDOW = timedelta(minutes=10)
TURN_GAP = timedelta(seconds=45)


@dataclass(slots=True)
class LocalResult:
    """What the local stage found out, beyond the score (which lives in the trace)."""

    score: float = 0.0
    addressed: str = ""
    question: bool = False
    open_question: bool = False
    addressed_to: list[str] = field(default_factory=list)
    engaged: bool = False
    one_to_one: bool = False
    from_bot: bool = False
    unanswered: bool = False
    short: bool = False  # a few words: a remark, not something to answer at length
    monologue: bool = False
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
        self.detector = AddressDetector(self.persona.names)
        self.bot_names = {normalise(n) for n in self.persona.names}
        words = [k for k in self.persona.keywords if k.strip()]
        ascii_kw = [re.escape(normalise(k)) for k in words if k.isascii()]
        self._kw_ascii = (
            re.compile(r"(?<![a-z0-9])(" + "|".join(ascii_kw) + r")(?![a-z0-9])")
            if ascii_kw
            else None
        )
        self._kw_other = [normalise(k) for k in words if not k.isascii()]

    # -- the score ---------------------------------------------------------------------------

    def score(
        self,
        s: Situation,
        view: ChannelView,
        trace: DecisionTrace,
        state: StateResult,
        *,
        unanswered: bool | None = None,
    ) -> LocalResult:
        r = LocalResult(state=state)
        msg = s.message
        text = "\n".join(m.text for m in view.burst())
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        r.from_bot = msg.user.is_bot
        # The channel's messages before this one: read by several rules, listed once.
        before = [m for m in s.recent if m.id != msg.id and m.ts <= msg.ts]
        r.short = len(text.split()) <= 6 if text.isascii() else len(text) <= 20
        if s.addressing:
            r.addressed = s.addressing.kind
            points = 80 if s.addressing.kind in ("name", "thread") else 100
            trace.add(f"addressed:{s.addressing.kind}", points, s.addressing.detail)
        self._question(s, text, trace, r, before)
        if r.open_question and view.in_exchange(bot_ids):
            # Someone is already talking with the asker: they will likely answer.
            trace.add("already in an exchange", -15, "another person is talking with the asker")
            r.open_question = False
        if not r.addressed:
            self._engagement(s, view, trace, r, before)
            self._keywords(text, trace)
            if GOOD_NEWS.found_in(text) and not r.question:
                trace.add("good news", 50, "shared with the room")
            self._silence(s, trace, before)
            self._one_to_one(view, trace, r, bot_ids)
            self._no_mention(s, trace, bot_ids)
            self._burst(s, trace)
            self._crowd(s, trace)
            self._decay(view, trace)
            self._presence(s, trace, bot_ids)
            self._user_limit(s, trace)
            if r.from_bot:
                trace.add("author is a bot", -30, msg.user.name)
            if unanswered and r.open_question:
                r.unanswered = True
                age = (s.now - msg.ts).total_seconds() / 60
                trace.add("open question unanswered", 45, f"nobody answered for {age:.0f} min")
        self._state(s, trace, r, state)
        r.score = trace.score
        return r

    # -- rules ---------------------------------------------------------------------------------

    def _question(
        self, s: Situation, text: str, trace: DecisionTrace, r: LocalResult,
        before: Sequence[Message],
    ) -> None:
        msg = s.message
        r.question = any(asks(line) for line in text.splitlines())
        if r.question and r.state is not None and r.state.state is ConvState.CONFLICT:
            # Questions thrown in a quarrel ("are you serious?!") are rhetorical.
            trace.add("question", 0, "rhetorical, in a conflict")
            r.question = False
            return
        r.addressed_to = [] if r.addressed else self.addressees(msg, s.recent)
        if r.addressed_to:
            who = ", ".join(r.addressed_to)
            trace.add("talking to someone else", -15, who)
            if r.question:
                trace.add("question", 0, f"asked of {who}: no bonus")
            return
        if not r.addressed and self._monologue(s, text, r, before):
            r.monologue = True
            trace.add("monologue", -20, "talking to oneself (seed 003: do not respond)")
            if r.question:
                trace.add("question", 0, "a self-question, not one put to the room")
            r.question = False
            return
        if r.question and not r.addressed and self._banter(s, text):
            # A quick quip inside a burst ("isn't the ref blind?") is not a question to answer.
            trace.add("question", 0, "a short quip in a burst of banter")
            r.question = False
            return
        if r.question:
            trace.add("question", 20, "ends like a question" if not r.addressed else "to the bot")
            r.open_question = not r.addressed and not msg.user.is_bot

    @staticmethod
    def _monologue(
        s: Situation, text: str, r: LocalResult, before: Sequence[Message]
    ) -> bool:
        """Seed 003's obvious monologue: musing, a self-question, or a run of lines nobody
        else is part of; never when the text puts something to the room."""
        if ROOM.found_in(text):
            return False
        msg = s.message
        cutoff = msg.ts - MONOLOGUE_WINDOW
        bots = s.bot.user_ids if s.bot else frozenset()
        # the last three messages of others within the window (the newest first)
        last_others = []
        for m in reversed(before):
            if m.ts >= cutoff and m.user.id != msg.user.id:
                last_others.append(m)
                if len(last_others) == 3:
                    break
        if any(m.user.id in bots for m in last_others):
            return False  # talking with the bot, which spoke just before
        lines = [line for line in text.splitlines() if line.strip()]
        if r.question and not any("?" in x or "？" in x for x in lines):
            return True  # "今日も残業かな", "ok why is this thing matching": musing
        if any(SELF_TALK.search(line.strip()) for line in lines):
            return True
        # Turns of the author with nobody else between (lines close together are one turn).
        turns, others, last = 1, False, msg.ts
        for m in reversed(before):
            if m.ts < cutoff:
                break
            if m.user.id != msg.user.id:
                others = True
                break
            if last - m.ts > TURN_GAP:
                turns += 1
            last = m.ts
        return turns >= MONOLOGUE_RUN or (not others and r.short and not r.question)

    def addressees(self, msg: Message, recent: Sequence[Message]) -> list[str]:
        """People other than the bot that the message speaks to."""
        out: list[str] = []
        bots = self.bot_names
        if msg.reply_to is not None:
            target = next((m for m in recent if m.id == msg.reply_to), None)
            if target is not None and not target.user.is_bot and target.user.id != msg.user.id:
                out.append(target.user.name)
        for mention in msg.mentions:
            if normalise(mention) not in bots and mention not in out:
                out.append(mention)
        lead = cues.leading_addressee(msg.text)
        if lead is not None and normalise(lead) not in bots:
            # the others in the buffer, read only for a leading name (few messages have one)
            known: dict[str, str] = {}
            for m in recent:
                if m.id != msg.id and m.user.id != msg.user.id:
                    known[m.user.id] = m.user.name
            hit = cues.match_names([lead], [*known.values(), *known.keys()])
            out.extend(h for h in hit if h not in out)
        for name in (*cues.at_mentions(msg.text), *cues.honorific_names(msg.text)):
            n = normalise(name)
            if n in bots or name in GROUP_WORDS or n in out or (len(name) < 2 and not n.isascii()):
                continue
            if any(b in n or n in b for b in bots):
                continue
            out.append(name)
        return out

    def _engagement(
        self, s: Situation, view: ChannelView, trace: DecisionTrace, r: LocalResult,
        before: Sequence[Message],
    ) -> None:
        bot = s.bot
        if bot is None or bot.last_reply_at is None:
            return
        since = s.now - bot.last_reply_at
        if since <= COOLDOWN:
            trace.add("cooldown", -50, f"replied {since.total_seconds():.0f} s ago")
        if since > ENGAGEMENT:
            return
        same: bool | None = None
        if self._answers_the_bot(s, before):
            same = True
        elif bot.last_reply_conversation is not None:
            answer = view.same_conversation(bot.last_reply_conversation, s.message.id)
            if answer is not None and (answer[0] or answer[1] >= ENGAGED_SURE):
                same = answer[0]
        if same is False:
            trace.add("engagement", 0, "the bot's last reply was in another conversation")
            return
        r.engaged = True
        trace.add("engagement", 40, f"the bot replied {since.total_seconds() / 60:.1f} min ago")

    def _answers_the_bot(self, s: Situation, before: Sequence[Message]) -> bool:
        """The person the bot just answered speaks right after it: that is to the bot."""
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        if not before or before[-1].user.id not in bot_ids:
            return False
        target = before[-1].reply_to
        return any(m.id == target and m.user.id == s.message.user.id for m in before)

    def _keywords(self, raw: str, trace: DecisionTrace) -> None:
        text = normalise(raw)
        found: list[str] = []
        if self._kw_ascii is not None:
            found += sorted({m.group(1) for m in self._kw_ascii.finditer(text)})
        found += [k for k in self._kw_other if k in text]
        if found:
            trace.add("keywords", 15, ", ".join(found[:5]))

    def _silence(self, s: Situation, trace: DecisionTrace, before: Sequence[Message]) -> None:
        if not before:
            trace.add("after silence", 10, "first message in a while")
            return
        gap = s.message.ts - before[-1].ts
        if gap >= SILENCE:
            trace.add("after silence", 10, f"{gap.total_seconds() / 60:.0f} min of silence")

    def _one_to_one(
        self, view: ChannelView, trace: DecisionTrace, r: LocalResult, bot_ids: frozenset[str]
    ) -> None:
        yes, source = view.is_one_to_one(bot_ids)
        if yes:
            r.one_to_one = True
            trace.add("one-to-one exchange", -20, f"two people talking to each other ({source})")

    def _no_mention(self, s: Situation, trace: DecisionTrace, bot_ids: frozenset[str]) -> None:
        window = list(s.recent)[-MENTION_WINDOW:]
        for m in window:
            if m.user.id in bot_ids or any(normalise(x) in self.bot_names for x in m.mentions):
                return
            if self.detector.mentions_name(m.text):
                return
        trace.add("bot not mentioned lately", -10, f"last {len(window)} messages")

    @staticmethod
    def _banter(s: Situation, text: str) -> bool:
        short = len(text.split()) <= 4 if text.isascii() else len(text) <= 15
        if not short:
            return False
        # Around the message, both sides: on a settled pass or a recheck the buffer already
        # shows whether the chatter went on.
        lo, hi = s.message.ts - BURST_WINDOW, s.message.ts + BURST_WINDOW
        return sum(1 for m in s.recent if lo <= m.ts <= hi) >= BURST_SIZE

    def _burst(self, s: Situation, trace: DecisionTrace) -> None:
        start = s.message.ts - BURST_WINDOW
        n = sum(1 for m in s.recent if start <= m.ts <= s.message.ts)
        if n >= BURST_SIZE:
            trace.add("burst", -10, f"{n} messages in 60 s")

    def _crowd(self, s: Situation, trace: DecisionTrace) -> None:
        start = s.message.ts - CROWD_WINDOW
        people = {
            m.user.id for m in s.recent if start <= m.ts <= s.message.ts and not m.user.is_bot
        }
        if len(people) >= CROWD_SIZE:
            trace.add("crowded channel", -10, f"{len(people)} people talking in 5 min")

    def _decay(self, view: ChannelView, trace: DecisionTrace) -> None:
        humans = [m for m in view.conversation() if not m.user.is_bot][-6:]
        if len(humans) < 6:
            # The seed looks at the channel's last six; do so when the conversation is short.
            cutoff = view.s.message.ts - timedelta(minutes=10)
            humans = [m for m in view.recent if not m.user.is_bot and m.ts >= cutoff][-6:]
        if len(humans) < 6:
            return
        first = sum(len(m.text) for m in humans[:3]) / 3
        last = sum(len(m.text) for m in humans[3:]) / 3
        if first <= 0:
            return
        ratio = last / first
        if ratio < 0.5:
            trace.add("conversation decaying", -15, f"replies {ratio:.0%} as long as before")
        elif ratio < 0.75:
            trace.add("conversation decaying", -10, f"replies {ratio:.0%} as long as before")

    def _presence(self, s: Situation, trace: DecisionTrace, bot_ids: frozenset[str]) -> None:
        window = list(s.recent)[-PRESENCE_WINDOW:]
        if len(window) < 5:
            return
        mine = sum(1 for m in window if m.user.id in bot_ids)
        share = mine / len(window)
        if share >= 0.4:
            trace.add("presence", -30, f"the bot wrote {mine} of the last {len(window)}")
        elif share >= 0.25:
            trace.add("presence", -10, f"the bot wrote {mine} of the last {len(window)}")

    def _user_limit(self, s: Situation, trace: DecisionTrace) -> None:
        n = self.ledger.count(s.channel.id, s.message.user.id, s.now, USER_LIMIT_WINDOW)
        if n >= USER_LIMIT:
            trace.add("user rate limit", -30, f"{s.message.user.name} triggered {n} in 10 min")

    def _state(self, s: Situation, trace: DecisionTrace, r: LocalResult, st: StateResult) -> None:
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
