"""The learned addressee and seat models of a decision, told for people.

The pipeline writes two entries into a trace's features:

- ``addressee``: who the message is for — ``to`` (a display name, the bot's, or "room"), its
  probability ``p``, ``bot`` (the probability that it is for the bot), every ``candidates``
  name → p, the ``top`` feature contributions for ``to``, the ``content`` features (what
  was said, beside who spoke when) that moved the model toward the bot or away from it,
  and the ``threshold`` at which the bot counts as addressed;
- ``seat``: would a member in the bot's seat speak now — ``p``, ``short`` (given it speaks,
  a short remark rather than a reply), ``score``, the ``top`` contributions to ``p`` and
  its ``content`` ones.

Each becomes a summary line and, on the next lines, the features that weighed most and
what was said that moved the decision:

    who it is for: alice 83 % · Kuu (the bot) 12 % · the room 5 % — counts as addressed at ≥ 60 %
    to alice because: name at the start +2.1, answers alice's question +0.9
    what was said, for the bot: shares words with their recent lines +0.7, their question -1.2
    would a member in its seat speak: 62 % (short remark 30 %)
    because: p(to the seat) +1.8, turns since the seat spoke -0.4
    what was said: a question to the seat +0.9

`kuuki why`, the playground's card and `/kuuki why` all use these words. A trace without the
entries (stored before the models) tells nothing; an entry that is not a mapping with a
probability is shown as it is, never dropped in silence.

The figures agree with what decided: a message addressed explicitly (a mention, its name, a
reply, its thread) is for the bot whatever the model guessed, so the card says that this
decided and shows the model's guess as such, without "counts as addressed at ≥ 65 %"; a
direct message is for the bot, with no guess at all. A "because" line names only the
features that say something about this message: the ones every message shares ("times
known", "the author new here", "people around", the base rate) are left out, and a line
with nothing else is not shown.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

ADDRESSEE = "addressee"
SEAT = "seat"
KEYS = (ADDRESSEE, SEAT)
ROOM = "room"
SHOWN = 5  # candidates named on the line; the rest are counted
TOP = 3  # feature contributions named
# Feature contributions that weigh alike on nearly every message: they explain nothing
# about this one (kuuki.decide.models.words' names).
BACKGROUND = frozenset({"times known", "the author new here", "people around", "base rate",
                        "their share", "has not spoken here"})
EXPLICIT = {"mention": "it was @mentioned", "reply": "a reply to its message",
            "name": "called by name", "thread": "in its own thread"}


def percent(p: float) -> str:
    """0.83 → '83 %'; a probability that rounds to 0 or 100 without being it says so."""
    v = p * 100
    if 0 < v < 0.5:
        return "<1 %"
    if 99.5 <= v < 100:
        return ">99 %"
    return f"{v:.0f} %"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _contributions(top: Any) -> str:
    """[["name at the start", 2.1], …] → 'name at the start +2.1, …' (the first TOP that
    say something about this message: BACKGROUND is left out)."""
    if not isinstance(top, list | tuple):
        return ""
    parts = []
    for item in top:
        if isinstance(item, list | tuple) and len(item) == 2 and _number(item[1]) is not None:
            name = str(item[0])
            shown = f"{float(item[1]):+.1f}"
            # a lift that rounds to nothing moved nothing a reader can see ("+0.0")
            if name.removesuffix(" (busy channel)") in BACKGROUND or shown in ("+0.0", "-0.0"):
                continue
            parts.append(f"{name} {shown}")
    return ", ".join(parts[:TOP])


@dataclass(frozen=True, slots=True)
class Share:
    """One candidate addressee: its label ('alice', 'Kuu (the bot)', 'the room') and p."""

    label: str
    p: float
    chosen: bool
    bot: bool

    @property
    def text(self) -> str:
        return f"{self.label} {percent(self.p)}"


@dataclass(frozen=True, slots=True)
class AddresseeView:
    shares: tuple[Share, ...]  # the most likely first, at most SHOWN
    others: int  # candidates left off the line
    bot: float | None  # p(for the bot) when no candidate is the bot
    threshold: float | None
    because: str  # "to alice because: …", or "" without contributions
    decided: str = ""  # how an explicit address decided ("called by name"), or ""
    verdict: str = ""  # what the threshold made of the model's guess, or ""
    content: str = ""  # "what was said, for the bot: …", or ""

    @property
    def guess(self) -> str:
        parts = [s.text for s in self.shares]
        if self.others:
            parts.append(f"{self.others} more")
        if self.bot is not None:
            parts.append(f"the bot {percent(self.bot)}")
        return " · ".join(parts) or "no candidate"

    @property
    def summary(self) -> str:
        if self.decided and not self.shares:
            return f"who it is for: the bot — {self.decided}"
        if self.decided:
            return (f"who it is for: the bot — {self.decided}, which decides "
                    f"(the addressee model alone: {self.guess})")
        line = f"who it is for: {self.guess}"
        return line + (f" — {self.verdict}" if self.verdict else "")

    def lines(self) -> list[str]:
        return [self.summary, *(x for x in (self.because, self.content) if x)]

    def notes(self) -> list[str]:
        if self.decided and not self.shares:
            return [f"{self.decided}: it is for the bot; no guess is needed"]
        if self.decided:
            return [f"{self.decided}: that decides; the bars are the addressee model's "
                    "guess alone"]
        return [n for n in (f"{self.others} more" if self.others else "",
                            f"the bot {percent(self.bot)}" if self.bot is not None else "",
                            self.verdict) if n]

    def card(self) -> dict[str, Any]:
        """What the playground's card draws: a bar per candidate and the notes."""
        return {
            "candidates": [{"label": s.label, "p": s.p, "percent": percent(s.p),
                            "chosen": s.chosen, "bot": s.bot} for s in self.shares],
            "notes": [*self.notes(), *([self.content] if self.content else [])],
            "because": self.because,
            "content": self.content,
        }


@dataclass(frozen=True, slots=True)
class SeatView:
    p: float
    short: float | None
    because: str  # "because: …", or ""
    content: str = ""  # "what was said: …", or ""
    against: str = ""  # "held back by: …" when the seat leans to silence, or ""

    @property
    def summary(self) -> str:
        short = f" (short remark {percent(self.short)})" if self.short is not None else ""
        return f"would a member in its seat speak: {percent(self.p)}{short}"

    def lines(self) -> list[str]:
        return [self.summary, *(x for x in (self.because, self.against, self.content) if x)]

    def card(self) -> dict[str, Any]:
        because = "; ".join(x for x in (self.because, self.against, self.content) if x)
        return {"p": self.p, "percent": percent(self.p),
                "short": percent(self.short) if self.short is not None else None,
                "because": because, "content": self.content}


def _bot_name(candidates: Mapping[str, float], bot: float | None,
              bot_names: Collection[str]) -> str | None:
    """The candidate that is the bot: one of its names, else the one whose p is `bot`."""
    names = {n.casefold() for n in bot_names}
    for name in candidates:
        if name.casefold() in names:
            return name
    if bot is None:
        return None
    same = [n for n, p in candidates.items()
            if n != ROOM and math.isclose(p, bot, rel_tol=0, abs_tol=1e-9)]
    return same[0] if len(same) == 1 else None


def addressee_view(
    value: Any, bot_names: Collection[str] = (), addressed: Any = None
) -> AddresseeView | None:
    """The ``addressee`` entry as a view, agreeing with ``addressed`` (the trace's
    ``features["addressed"]``: how the message was addressed, if it was); None when it is
    not a mapping with candidates (a direct message: a view with no guess)."""
    if addressed == "dm":
        return AddresseeView((), 0, None, None, "", decided="a direct message")
    if not isinstance(value, Mapping) or not isinstance(value.get("candidates"), Mapping):
        return None
    candidates = {str(k): p for k, v in value["candidates"].items()
                  if (p := _number(v)) is not None}
    to, bot = str(value.get("to", "")), _number(value.get("bot"))
    me = _bot_name(candidates, bot, bot_names)

    def label(name: str) -> str:
        return "the room" if name == ROOM else f"{name} (the bot)" if name == me else name

    ranked = sorted(candidates.items(), key=lambda kv: -kv[1])
    explicit = EXPLICIT.get(str(addressed)) if addressed else None
    threshold = _number(value.get("threshold"))
    leans = (not addressed and me is not None and threshold is not None
             and candidates.get(me, 0.0) >= threshold)
    # The bar in bold is what the decision took: the bot when addressed, and not the bot
    # when the model leaned to it but the message was not counted as addressed.
    chosen = me if explicit and me is not None else None if leans and to == me else to
    shares = tuple(Share(label(n), p, n == chosen, n == me) for n, p in ranked[:SHOWN])
    told = _contributions(value.get("top"))
    said = _contributions(value.get("content"))
    who = label(me) if me is not None else "the bot"
    return AddresseeView(
        shares=shares,
        others=max(0, len(ranked) - SHOWN),
        bot=bot if me is None else None,
        threshold=threshold,
        because=f"to {label(to)} because: {told}" if told and to else "",
        decided=explicit or "",
        verdict="" if explicit or threshold is None else _verdict(addressed, threshold, leans),
        content=f"what was said, for {who}: {said}" if said else "",
    )


def _verdict(addressed: Any, threshold: float, leans: bool) -> str:
    """What the threshold made of the guess: for the bot by context, or not for it — and
    when the model leaned to the bot all the same, why that did not count."""
    if addressed == "context":
        return f"for the bot by context (it counts from {percent(threshold)})"
    if leans:
        return (f"the model leans to the bot (≥ {percent(threshold)}), but the bot was not "
                "part of this talk and was not named: not counted as addressed")
    return f"not for the bot (it would count from {percent(threshold)})"


def seat_view(value: Any) -> SeatView | None:
    """The ``seat`` entry as a view; None when it is not a mapping with a probability."""
    if not isinstance(value, Mapping) or (p := _number(value.get("p"))) is None:
        return None
    told = _contributions(value.get("top"))
    said = _contributions(value.get("content"))
    # what held it down, said only when it leans to silence: "speaks now 0 %" beside
    # reasons that all push up would read as a contradiction
    held = _contributions(value.get("against")) if p < 0.5 else ""
    return SeatView(p, _number(value.get("short")), f"because: {told}" if told else "",
                    f"what was said: {said}" if said else "",
                    f"held back by: {held}" if held else "")


def unreadable(key: str, value: Any) -> str:
    shown = repr(value)
    return f"{key} (unreadable): {shown if len(shown) <= 200 else shown[:199] + '…'}"


def model_lines(features: Mapping[str, Any], bot_names: Collection[str] = ()) -> list[list[str]]:
    """Each model in the trace as [summary, because…]; nothing for a trace without them.

    An entry the views cannot read is shown as it was stored, under its key."""
    told: list[list[str]] = []
    addressed = features.get("addressed")
    for key in KEYS:
        if key not in features and not (key == ADDRESSEE and addressed == "dm"):
            continue
        value = features.get(key)
        view = (addressee_view(value, bot_names, addressed) if key == ADDRESSEE
                else seat_view(value))
        told.append(view.lines() if view is not None else [unreadable(key, value)])
    return told


def card_parts(
    features: Mapping[str, Any], bot_names: Collection[str] = ()
) -> tuple[dict[str, Any], list[str]]:
    """The playground card's share: {"addressee": bars and notes | None, "seat": … | None},
    and the lines of an entry that could not be read (for the card's list of features)."""
    addressee = addressee_view(features.get(ADDRESSEE), bot_names, features.get("addressed"))
    seat = seat_view(features.get(SEAT))
    parts = {ADDRESSEE: addressee.card() if addressee is not None else None,
             SEAT: seat.card() if seat is not None else None}
    odd = [unreadable(k, features[k]) for k in KEYS if k in features and parts[k] is None]
    return parts, odd
