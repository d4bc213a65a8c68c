"""The features of the addressee and seat models: what a member of the chat sees
when message ``i`` arrives, never anything after it.

:class:`Context` reads the recent window once per message (who spoke, when, how often);
:func:`addressee_rows` gives one row per candidate (a person or :data:`ROOM`),
:func:`seat_row` one row for a seat. Features of a message alone (a greeting, a question)
enter the addressee model only through the room row: a conditional logit compares the
candidates of one message, so what they share cancels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kuuki.decide.models.content import CONTENT_FEATURES, ContentCache, content_rows
from kuuki.decide.models.cues import (
    END,
    HONORIFIC,
    LEAD,
    MID,
    PARTICLE,
    CueCache,
    TurnCues,
    overlap,
)
from kuuki.decide.models.turns import ROOM, Turn
from kuuki.errors import ConfigError

FloatArray = npt.NDArray[np.float64]
# the predicted addressees of an earlier turn (key -> p), from the first-round model
PriorFn = Callable[[int], Mapping[str, float]]

_REL = "aco-"  # a turn's speaker relative to a pair: the author, the candidate, other, none
PATTERNS = tuple(f"pat_{x}{y}{z}" for x in _REL for y in _REL for z in _REL)
PERSON = (
    "name", "name_call", "name_lead", "name_end", "name_ref", "mentioned", "parent_is",
    "parent_other", "prev_is", "last_other_is",
    "since", "never", "share", "asked", "asked_answer", "named_author", "author_named_it",
    "author_prev_to", "author_prev_to_adjacent", "its_prev_to_author", "you_last_other",
    "thanks_last_other", "greeting_last_other", "question_last_other", "answer_last_other",
    "gap", "gap_known", "overlap_last", "overlap_recent", "asked_any", "exchanges",
    "its_prev_to_third", "overlap_any", "asked_recent", "took_up_author",
    "author_recent_to", "author_window_to", "its_recent_to_author",
    "register_theirs", "register_author_to", "casual_theirs",
)
ROOM_FEATURES = (
    "room", "room_greeting", "room_question", "room_no_name", "room_live", "room_ts",
    "room_gap", "room_author_prev", "room_parent", "room_author_new", "room_length",
    "room_you", "room_thanks", "room_answer", "room_first",
)
# Turn-taking in a crowded channel (more than SMALL live speakers, the author included)
# is not a small group's: those features once more, times "crowded", let the two have
# their own weights (the three-person chats of MRMP are never crowded, most of IRC is).
# Names, mentions, replies, what was said and having never spoken in the window mean the
# same in both and keep one weight (in MRMP everyone speaks: a small group's own weight
# for "never spoke" would be learned from the silent member alone, and outweigh a name).
SMALL = 3
_BASE = PERSON + CONTENT_FEATURES + PATTERNS + ROOM_FEATURES
_SHARED = frozenset(("name", "name_call", "name_lead", "name_end", "name_ref", "mentioned",
                     "parent_is", "parent_other", "never", *CONTENT_FEATURES))
_CROWDED = [k for k, n in enumerate(_BASE) if n not in _SHARED]
_RUNS: list[list[int]] = []  # _CROWDED as runs (to, from, length): slices copy faster
for _to, _from in enumerate(_CROWDED, len(_BASE)):
    if _RUNS and _from == _RUNS[-1][1] + _RUNS[-1][2]:
        _RUNS[-1][2] += 1
    else:
        _RUNS.append([_to, _from, 1])
ADDRESSEE_FEATURES = (*_BASE, *(f"crowded_{_BASE[k]}" for k in _CROWDED))
_NB = len(_BASE)
PREDICTED = ("author_prev_to", "author_prev_to_adjacent", "its_prev_to_author",
             "author_recent_to", "author_window_to", "its_recent_to_author",
             "register_author_to",
             "its_prev_to_third")
_A = {n: k for k, n in enumerate(ADDRESSEE_FEATURES)}
_C0 = _A[CONTENT_FEATURES[0]]
# What was said, beside who spoke when: the features `kuuki why` tells as "what was said"
CONTENT = frozenset((
    "asked", "asked_answer", "asked_any", "asked_recent", "overlap_last", "overlap_recent",
    "overlap_any", "took_up_author", "you_last_other", "thanks_last_other",
    "greeting_last_other", "question_last_other", "answer_last_other", *CONTENT_FEATURES,
))
CONTENT_COLUMNS = tuple(k for k, n in enumerate(ADDRESSEE_FEATURES)
                        if n.removeprefix("crowded_") in CONTENT)
_PAT0 = _A[PATTERNS[0]]
_NP = len(PERSON)
_LAST_OTHER = _A["you_last_other"]


class Context:
    """Message ``i`` of ``turns`` and the window of ``window`` turns before it."""

    __slots__ = (
        "_named",
        "author",
        "author_last",
        "cache",
        "count",
        "exchanges",
        "first",
        "i",
        "last",
        "last_other",
        "names",
        "said",
        "start",
        "turn",
        "turns",
        "window",
    )

    def __init__(self, turns: Sequence[Turn], i: int, window: int, cache: CueCache,
                 names: Mapping[str, Sequence[str]]) -> None:
        self.turns, self.i, self.cache, self.names = turns, i, cache, names
        self.window, self.turn = window, turns[i]
        self.author = self.turn.speaker
        self.start = max(0, i - window)
        self.first = turns[self.start]
        self.last: dict[str, int] = {}
        self.count: dict[str, int] = {}
        self.said: dict[str, list[int]] = {}  # each speaker's turns in the window
        # how often each speaker and the author took turns one after the other
        self.exchanges: dict[str, int] = {}
        before = None
        for j in range(self.start, i):
            s = turns[j].speaker
            self.last[s] = j
            self.count[s] = self.count.get(s, 0) + 1
            self.said.setdefault(s, []).append(j)
            if before is not None and before != s and self.author in (before, s):
                other = s if before == self.author else before
                self.exchanges[other] = self.exchanges.get(other, 0) + 1
            before = s
        self.author_last = self.last.get(self.author)
        self.last_other: str | None = None
        for j in range(i - 1, self.start - 1, -1):
            if turns[j].speaker != self.author:
                self.last_other = turns[j].speaker
                break
        self._named: dict[str, int] = {}

    def named(self, key: str) -> int:
        hit = self._named.get(key)
        if hit is None:
            hit = self.cache.named(self.turns[self.i], key, self.names)
            self._named[key] = hit
        return hit

    def candidates(self, always: Sequence[str]) -> list[str]:
        """Live speakers, anyone named or mentioned, and ``always``; never the author."""
        out = [s for s in self.last if s != self.author]
        extra = [*self.turns[self.i].mentions, *always]
        named = self.cache.named_in(self.turns[self.i], self.names)
        extra += [k for k in named if k not in self.last]
        for k in extra:
            if k != self.author and k not in out:
                out.append(k)
        return out

    def pattern(self, other: str) -> int:
        """Index of the last three speakers' pattern w.r.t. the author and ``other``."""
        code = 0
        for j in (self.i - 1, self.i - 2, self.i - 3):
            if j < self.start:
                r = 3
            else:
                s = self.turns[j].speaker
                r = 0 if s == self.author else 1 if s == other else 2
            code = code * 4 + r
        return code

    def since(self, key: str) -> tuple[float, bool]:
        j = self.last.get(key)
        if j is None:
            return math.log1p(self.i - self.start + 1), True
        return math.log1p(self.i - j), False

    def asked(self, key: str) -> bool:
        """``key``'s last message asked something, and the author has not spoken since."""
        j = self.last.get(key)
        if j is None or (self.author_last is not None and self.author_last > j):
            return False
        return self.cache.cues(self.turns[j]).question

    def gap(self, j: int | None) -> float | None:
        t, ts = self.turns[self.i].ts, None if j is None else self.turns[j].ts
        if t is None or ts is None:
            return None
        return math.log1p(max(0.0, t - ts))


def context(cache: CueCache, turns: Sequence[Turn], i: int, window: int,
            names: Mapping[str, Sequence[str]]) -> Context:
    """The Context of message ``i``: the one built last when it is for the same message of
    the same chat (the seat model reads the window the addressee model just read)."""
    last = cache.last_context
    if (isinstance(last, Context) and last.turns is turns and last.i == i
            and last.window == window and last.names is names and last.turn is turns[i]
            and last.first is turns[last.start]):
        return last
    ctx = Context(turns, i, window, cache, names)
    cache.last_context = ctx
    return ctx


def addressee_rows(ctx: Context, candidates: Sequence[str], prior: PriorFn | None,
                   texts: ContentCache | None = None) -> FloatArray:
    """One feature row per candidate (``candidates`` then :data:`ROOM`, last); what was
    said (kuuki.decide.models.content) when ``texts`` is given."""
    n = len(candidates)
    x = np.zeros((n + 1, len(ADDRESSEE_FEATURES)))
    if texts is not None and candidates:
        x[:-1, _C0:_C0 + len(CONTENT_FEATURES)] = content_rows(ctx, candidates, texts)
    turn = ctx.turns[ctx.i]
    me = ctx.cache.cues(turn)
    parent = turn.parent if turn.parent is not None and turn.parent < ctx.i else None
    adjacent = ctx.author_last == ctx.i - 1
    bits = [ctx.named(c) for c in candidates]
    if candidates:
        read = _Read(ctx, me, prior, parent)
        x[:-1, :_NP] = [read.row(c, b, adjacent) for c, b in zip(candidates, bits, strict=True)]
        x[range(n), [_PAT0 + ctx.pattern(c) for c in candidates]] = 1
    _room_row(x[-1], ctx, me, any_name=any(bits), n=n,
              adjacent=adjacent, parent=parent)
    if len(ctx.last) > SMALL:
        for to, at, width in _RUNS:
            x[:, to:to + width] = x[:, at:at + width]
    return x


class _Read:
    """What every candidate's row of one message reads, taken once: the window's cues,
    this message's overlap with each earlier turn, the author's first-round addressees.

    ``prior`` is called in the order the rows read it (the author's last turn, the
    author's turns, then each candidate's last and last three): a first-round prediction
    is made the first time it is asked for and kept by the model, so the order is part
    of what the model remembers."""

    __slots__ = ("author_prior", "ctx", "cw", "me", "mine", "ov", "parent_speaker", "prior",
                 "reg", "registers")

    def __init__(self, ctx: Context, me: TurnCues, prior: PriorFn | None,
                 parent: int | None) -> None:
        self.ctx, self.me, self.prior = ctx, me, prior
        self.parent_speaker = ctx.turns[parent].speaker if parent is not None else None
        cache, turns, start = ctx.cache, ctx.turns, ctx.start
        self.cw = cache.window(turns, start, ctx.i)
        self.author_prior = (prior(ctx.author_last)
                             if prior is not None and ctx.author_last is not None else {})
        said = ctx.said.get(ctx.author, ())
        self.mine = [prior(j) for j in said] if prior is not None else []
        self.registers = [_register(me, self.cw[j - start]) for j in said] if self.mine else []
        grams, author = me.grams, ctx.author
        # overlap(grams, ...) of every earlier turn but the author's (no candidate's)
        n = len(grams)
        self.ov = [0.0 if not n or not (m := len(q.grams)) or turns[j].speaker == author
                   else len(grams & q.grams) / math.sqrt(n * m)
                   for j, q in enumerate(self.cw, start)]
        self.reg = ([_register(me, q) for q in self.cw] if me.polite or me.casual else [])

    def row(self, c: str, bits: int, adjacent: bool) -> list[float]:
        """Candidate ``c``'s PERSON features."""
        ctx, me = self.ctx, self.me
        row = [0.0] * _NP
        if self.mine:
            _author_to(row, c, self.mine, self.registers)
        if bits:
            row[0:5] = _name_features(bits)
        row[_A["mentioned"]] = c in ctx.turn.mentions
        if self.parent_speaker is not None:
            row[_A["parent_is" if self.parent_speaker == c else "parent_other"]] = 1
        row[_A["prev_is"]] = ctx.i > 0 and ctx.turns[ctx.i - 1].speaker == c
        last_other = ctx.last_other == c
        row[_A["last_other_is"]] = last_other
        row[_A["since"]], row[_A["never"]] = ctx.since(c)
        row[_A["share"]] = ctx.count.get(c, 0) / max(1, ctx.i - ctx.start)
        j = ctx.last.get(c)
        asked = (j is not None and (ctx.author_last is None or ctx.author_last <= j)
                 and self.cw[j - ctx.start].question)
        row[_A["asked"]], row[_A["asked_answer"]] = asked, asked and me.answer
        if j is not None:
            self._their_last(row, c, j)
        if ctx.author_last is not None:
            row[_A["author_named_it"]] = ctx.cache.named(
                ctx.turns[ctx.author_last], c, ctx.names) > 0
        p = self.author_prior.get(c, 0.0)
        row[_A["author_prev_to"]], row[_A["author_prev_to_adjacent"]] = p, p * adjacent
        if last_other:
            row[_LAST_OTHER:_LAST_OTHER + 5] = (me.you, me.thanks, me.greeting, me.question,
                                                me.answer)
        row[_A["exchanges"]] = math.log1p(ctx.exchanges.get(c, 0))
        g = ctx.gap(j)
        if g is not None:
            row[_A["gap"]], row[_A["gap_known"]] = g, 1
        return row

    def _their_last(self, row: list[float], c: str, j: int) -> None:
        """What candidate ``c`` last said (its turn ``j``, and its two before; and all it
        said in the window): did it name the author, whom did it (by the first round)
        address, does this message take it up, did it ask something in the last five
        turns, did its last message take up what the author said before it."""
        ctx, prior, cw, ov, s0 = self.ctx, self.prior, self.cw, self.ov, self.ctx.start
        row[_A["named_author"]] = ctx.cache.named(ctx.turns[j], ctx.author, ctx.names) > 0
        said = ctx.said[c]
        recent = said[-3:]
        if prior is not None:
            theirs = prior(j)
            row[_A["its_prev_to_author"]] = mine = theirs.get(ctx.author, 0.0)
            row[_A["its_prev_to_third"]] = 1.0 - mine - theirs.get(ROOM, 0.0)
            row[_A["its_recent_to_author"]] = sum(
                prior(k).get(ctx.author, 0.0) for k in recent) / len(recent)
        row[_A["overlap_last"]] = ov[j - s0]
        row[_A["overlap_recent"]] = max([ov[k - s0] for k in recent])
        row[_A["asked_any"]] = cw[j - s0].question
        row[_A["overlap_any"]] = max([ov[k - s0] for k in said])
        if self.reg:  # the same register as theirs: how people who know each other, or
            # not, talk
            row[_A["register_theirs"]] = sum([self.reg[k - s0] for k in said]) / len(said)
            if self.me.casual:
                row[_A["casual_theirs"]] = sum(
                    [float(cw[k - s0].casual) for k in said]) / len(said)
        row[_A["asked_recent"]] = any([cw[k - s0].question for k in said if k >= ctx.i - 5])
        if ctx.author_last is not None and ctx.author_last < j:
            authors = cw[ctx.author_last - s0].grams
            row[_A["took_up_author"]] = overlap(authors, cw[j - s0].grams)


def _author_to(row: list[float], c: str, mine: Sequence[Mapping[str, float]],
               registers: Sequence[float]) -> None:
    """Whom the author spoke to (by the first round) in their last three turns and all of
    theirs in the window: a speaker keeps talking to someone across a topic."""
    to = [q.get(c, 0.0) for q in mine]
    row[_A["author_recent_to"]] = sum(to[-3:]) / len(to[-3:])
    row[_A["author_window_to"]] = sum(to) / len(to)
    to_c = sum(to)
    if to_c > 0.3:  # the author's register with them, as this message's
        row[_A["register_author_to"]] = sum(
            [v * k for v, k in zip(to, registers, strict=True)]) / to_c


def _room_row(room: FloatArray, ctx: Context, me: TurnCues, *, any_name: bool, n: int,
              adjacent: bool, parent: int | None) -> None:
    """The room's own row: what the message is like, whoever it is to."""
    gap = ctx.gap(ctx.i - 1 if ctx.i > 0 else None)
    room[_A["room"]:_NB] = (
        1, me.greeting, me.question, not any_name, math.log1p(n),
        ctx.turns[ctx.i].ts is not None, gap or 0.0, adjacent, parent is not None,
        ctx.author_last is None, me.length, me.you, me.thanks, me.answer, ctx.i == ctx.start,
    )


def _register(me: TurnCues, other: TurnCues) -> float:
    """1 when two Japanese lines share a register (both polite or both plain), else 0."""
    return float((me.polite and other.polite) or (me.casual and other.casual))


def _name_features(bits: int) -> tuple[float, ...]:
    """A name in the message: any, a call, at the start IRC style (``nick:``), at the end,
    a reference.

    A call is the name as a vocative (leading, trailing, between commas) or with an
    honorific and no particle of reference after it (``ねぎとろさんも…？``); a reference is
    any other occurrence (``ねぎとろさんが言ってた``, ``I asked bob``). (An honorific and a
    topic particle in a question was a feature of its own; MRMP has a few dozen of them,
    too few for a weight: it learned -4, against the corpus's own counts.)"""
    call = is_call(bits)
    return (1.0, call, bool(bits & LEAD), bool(bits & END), not call)


def is_call(bits: int) -> bool:
    """A name found at ``bits`` (kuuki.decide.cues.name_bits) is a call, not a reference."""
    return bool(bits & (LEAD | END | MID)) or (bool(bits & HONORIFIC) and not bits & PARTICLE)


def shipped_path(name: str) -> Path:
    """Where a shipped weights file lies: beside this module, as package data. `kuuki train`
    writes there by default and the models' ``shipped()`` read it."""
    return Path(__file__).with_name(name)


def load_weights(path: Path, setting: str, names: Sequence[str]) -> dict[str, FloatArray]:
    """A model's arrays from ``path``; a clear error naming ``setting`` when the file is
    unreadable or was trained on other features than ``names``."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if tuple(str(n) for n in z["features"]) != tuple(names):
                raise ConfigError(setting, f"{path} was trained on other features")
            return {k: z[k] for k in z.files if k != "features"}
    except (OSError, KeyError, ValueError) as exc:
        raise ConfigError(setting, f"cannot read {path}: {exc}") from exc


def save_weights(path: Path, names: Sequence[str], **arrays: object) -> None:
    # the arrays first, then the names: the order the shipped files were written in
    np.savez_compressed(path, **arrays, features=np.array(names))  # type: ignore[arg-type]
