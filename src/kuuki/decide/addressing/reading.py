"""What the learned models read in one message: who it is for, and whether a member in the
bot's seat would speak now (kuuki.decide.models.addressee, kuuki.decide.models.seat).

The channel's buffer becomes a list of turns as the models were trained on: speaker,
text, time, the message it answers when the platform says so (a reply), platform
mentions. The disentangler's guessed parent is not passed: the model learned `parent` as
a platform's reply, and a guess read as one made it certain (p 1.0 or 0.0). The bot's own
messages, under any of its user ids, are one participant, `SEAT`, called by the persona's
names. The `addressee` stage (kuuki.decide.addressing.context) runs both models once per decision
and counts a message as addressed to the bot *by context* when the addressee model gives
the bot at least ADDRESSED_P (ANSWER_P when the bot just asked a question) and the bot is
part of the talk (it spoke in the window, or its name is in the message)
(docs/decisions.md, "Issue 25").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice

from kuuki.conversation.live import BOT_KEY
from kuuki.decide.addressing.names import AddressDetector
from kuuki.decide.models.addressee import ROOM, AddresseeModel, AddresseeResult
from kuuki.decide.models.features import is_call
from kuuki.decide.models.seat import SeatModel, SeatResult
from kuuki.decide.models.turns import Turn
from kuuki.decide.phrases import GOOD_NEWS, asks
from kuuki.decide.situation import Situation
from kuuki.domain import Message

SEAT = BOT_KEY
# The addressee model's probability for the bot at which a message counts as addressed to
# it although nothing explicit (mention, reply, name call, DM, its thread) says so. Chosen
# on the MRMP dev split with `kuuki bench seat` (docs/benchmarks.md, "Issue 25").
ADDRESSED_P = 0.65
# ...and when the bot's own last line, among the last ANSWER_SPAN messages, asked a
# question: a member who asked listens for the answer.
ANSWER_P = 0.5
ANSWER_SPAN = 4
# ...and in a crowded talk (CROWDED or more people it could be for, the bot among them)
# when the bot is the model's likeliest addressee: there the probability is shared among
# many, and a lead at 50 % is as clear as 65 % between two. Chosen on the Ubuntu IRC dev
# logs with `kuuki bench seat --strip-nick` (docs/benchmarks.md, "Issue 35: the addressee
# model's trees"); a three-person chat never has that many, so MRMP's figures are unchanged.
CROWDED_P = 0.5
CROWDED = 4
WINDOW = 40  # messages before this one that the models may read (they use fewer)
_TURNS_KEPT = 20_000
_CHANNELS_KEPT = 1_000


@dataclass(frozen=True, slots=True)
class Reading:
    addressee: AddresseeResult
    seat: SeatResult
    display: dict[str, str]  # participant key -> the name people see
    live: bool = False  # the bot spoke in the window the models read
    named: bool = False  # the bot's name is in the message
    called: bool = False  # ...as a call (at the start, the end, between commas), not a reference
    ms: float = 0.0  # the time the reading took (wall, CPU): part of the local stage's
    cpu_ms: float = 0.0
    read: bool = True  # False: the models were not run (RoomReader.read says when)

    @property
    def bot_p(self) -> float:
        return self.addressee.of(SEAT)

    def name(self, key: str) -> str:
        return "the room" if key == ROOM else self.display.get(key, key)


class RoomReader:
    """Runs the shipped addressee and seat models on a situation (one persona)."""

    def __init__(
        self,
        persona_names: Sequence[str],
        *,
        addressee: AddresseeModel | None = None,
        seat: SeatModel | None = None,
    ) -> None:
        self.persona_names = tuple(n for n in persona_names if n.strip())
        self.addressee = addressee or AddresseeModel.shipped()
        self.seat = seat or SeatModel.shipped(cache=self.addressee.cache)
        self.detector = AddressDetector(self.persona_names)
        # the same Turn object for a message each time it is read, so the models' per-turn
        # caches hold (bounded: the oldest go first)
        self._turns: dict[tuple[str, str, str, int | None, tuple[str, ...]], Turn] = {}
        self._names: dict[str, dict[str, list[str]]] = {}

    def read(self, s: Situation) -> Reading:
        named = self.detector.mentions_name(s.message.text)
        if not (s.addressing or named or _bot_spoke(s) or _may_matter(s.message.text)):
            # Nothing the models say can change this decision: nobody speaks to a member by
            # context who is not part of the talk, and a silent seat's p is ~0.006 on MRMP
            # dev; only a question or good news reads who else it is for. Not running them
            # here keeps the message path's cost (kuuki bench ingest) near what it was.
            self.cue(s)
            return Reading(UNREAD_ADDRESSEE, UNREAD_SEAT, {}, read=False)
        turns, i, names, display = self.turns(s)
        a = self.addressee.predict(turns, i, names, always=(SEAT,))
        seat = self.seat.predict(turns, i, SEAT, names, a)
        live = any(t.speaker == SEAT for t in turns[:i])
        called = named and is_call(self.addressee.cache.named(turns[i], SEAT, names))
        return Reading(a, seat, display, live, named, called)

    def cue(self, s: Situation) -> None:
        """An unread line's cues and n-grams, read as it arrives: the next reading makes the
        first round of every line since the last one, and read then, after a run of unread
        lines, they came a dozen at once. Only for a line whose `Turn` the reading builds
        the same (no reply, no mention: those it builds from its own window)."""
        m = s.message
        if m.reply_to is not None or m.mentions or m.deleted or not m.text.strip():
            return
        speaker = SEAT if s.bot and m.user.id in s.bot.user_ids else m.user.id
        said = (m.id, m.text, speaker, None, ())
        turn = self._turns.get(said)
        if turn is None:
            turn = Turn(speaker, m.text, m.ts.timestamp())
            self._keep(said, turn)
        self.addressee.cache.cues(turn)
        self.addressee.texts.text(turn)

    def _keep(self, said: tuple[str, str, str, int | None, tuple[str, ...]], turn: Turn
              ) -> None:
        self._turns[said] = turn
        if len(self._turns) > _TURNS_KEPT:
            del self._turns[next(iter(self._turns))]

    def turns(
        self, s: Situation
    ) -> tuple[list[Turn], int, dict[str, list[str]], dict[str, str]]:
        """The buffer up to the message as turns; the message is the last one."""
        msg = s.message
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        # the last WINDOW readable messages before this one (the buffer is hundreds long:
        # read from its end)
        recent = s.recent
        stop = next((at for at, m in enumerate(recent) if m.id == msg.id), len(recent))
        seen: list[Message] = []
        for at in range(stop - 1, -1, -1):
            if len(seen) == WINDOW:
                break
            m = recent[at]
            # A person's message with no text is nothing to read; the bot's own always
            # counts (a replay without a model leaves its replies empty).
            if m.ts <= msg.ts and not m.deleted and (m.text.strip() or m.user.id in bot_ids):
                seen.append(m)
        seen.reverse()
        seen.append(msg)
        index = {m.id: n for n, m in enumerate(seen)}
        names: dict[str, list[str]] = {SEAT: list(self.persona_names)}
        display: dict[str, str] = {SEAT: self.persona_names[0] if self.persona_names else "bot"}
        by_name: dict[str, str] = {n.casefold(): SEAT for n in self.persona_names}
        for m in seen:
            key = SEAT if m.user.id in bot_ids else m.user.id
            if key not in names:
                names[key] = [m.user.name, m.user.id]
                display[key] = m.user.name
                by_name.setdefault(m.user.name.casefold(), key)
            by_name.setdefault(m.user.id.casefold(), key)
        turns: list[Turn] = []
        for m in seen:
            parent = index.get(m.reply_to) if m.reply_to is not None else None
            speaker = SEAT if m.user.id in bot_ids else m.user.id
            mentions = tuple(k for x in m.mentions if (k := by_name.get(x.casefold())))
            said = (m.id, m.text, speaker, parent, mentions)
            turn = self._turns.get(said)
            if turn is None:
                turn = Turn(speaker, m.text, m.ts.timestamp(), parent, mentions)
                self._keep(said, turn)
            turns.append(turn)
        # The models remember what they read of each turn while `names` is the same object:
        # one per channel, replaced when its participants change.
        kept = self._names.get(s.channel.id)
        if kept is not None and kept == names:
            names = kept
        else:
            self._names[s.channel.id] = names
            if len(self._names) > _CHANNELS_KEPT:
                del self._names[next(iter(self._names))]
        return turns, len(turns) - 1, names, display


UNREAD_ADDRESSEE = AddresseeResult(ROOM, 1.0, {ROOM: 1.0}, ())
UNREAD_SEAT = SeatResult(0.0, 0.0, ())


def _bot_spoke(s: Situation) -> bool:
    """The bot wrote one of `last_before(s, WINDOW)` (asked of every message: no list)."""
    if not s.bot or not s.bot.user_ids:
        return False
    bot_ids = s.bot.user_ids
    return any(m.user.id in bot_ids for m in islice(_before(s), WINDOW))


def last_before(s: Situation, n: int) -> list[Message]:
    """The last ``n`` messages of the buffer at or before the message's time, the message
    itself left out, oldest first."""
    out = list(islice(_before(s), n))
    out.reverse()
    return out


def _before(s: Situation) -> Iterator[Message]:
    """The buffer's messages at or before the message's time, the message itself left out,
    newest first (read from the buffer's end: it is hundreds long)."""
    msg, recent = s.message, s.recent
    for k in range(len(recent) - 1, -1, -1):
        m = recent[k]
        if m.ts <= msg.ts and m.id != msg.id:
            yield m


def _may_matter(text: str) -> bool:
    """A question or good news: the policy asks who it is for."""
    return asks(text) or GOOD_NEWS.found_in(text)
