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
    """[["name at the start", 2.1], …] → 'name at the start +2.1, …' (the first TOP)."""
    if not isinstance(top, list | tuple):
        return ""
    parts = []
    for item in top[:TOP]:
        if isinstance(item, list | tuple) and len(item) == 2 and _number(item[1]) is not None:
            parts.append(f"{item[0]} {float(item[1]):+.1f}")
    return ", ".join(parts)


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
    content: str = ""  # "what was said, for the bot: …", or ""

    @property
    def summary(self) -> str:
        parts = [s.text for s in self.shares]
        if self.others:
            parts.append(f"{self.others} more")
        if self.bot is not None:
            parts.append(f"the bot {percent(self.bot)}")
        line = "who it is for: " + (" · ".join(parts) or "no candidate")
        if self.threshold is not None:
            line += f" — counts as addressed at ≥ {percent(self.threshold)}"
        return line

    def lines(self) -> list[str]:
        return [self.summary, *(x for x in (self.because, self.content) if x)]

    def card(self) -> dict[str, Any]:
        """What the playground's card draws: a bar per candidate and the notes."""
        return {
            "candidates": [{"label": s.label, "p": s.p, "percent": percent(s.p),
                            "chosen": s.chosen, "bot": s.bot} for s in self.shares],
            "notes": [n for n in (
                f"{self.others} more" if self.others else "",
                f"the bot {percent(self.bot)}" if self.bot is not None else "",
                f"counts as addressed at ≥ {percent(self.threshold)}"
                if self.threshold is not None else "",
                self.content,
            ) if n],
            "because": self.because,
            "content": self.content,
        }


@dataclass(frozen=True, slots=True)
class SeatView:
    p: float
    short: float | None
    because: str  # "because: …", or ""
    content: str = ""  # "what was said: …", or ""

    @property
    def summary(self) -> str:
        short = f" (short remark {percent(self.short)})" if self.short is not None else ""
        return f"would a member in its seat speak: {percent(self.p)}{short}"

    def lines(self) -> list[str]:
        return [self.summary, *(x for x in (self.because, self.content) if x)]

    def card(self) -> dict[str, Any]:
        because = "; ".join(x for x in (self.because, self.content) if x)
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


def addressee_view(value: Any, bot_names: Collection[str] = ()) -> AddresseeView | None:
    """The ``addressee`` entry as a view; None when it is not a mapping with candidates."""
    if not isinstance(value, Mapping) or not isinstance(value.get("candidates"), Mapping):
        return None
    candidates = {str(k): p for k, v in value["candidates"].items()
                  if (p := _number(v)) is not None}
    to, bot = str(value.get("to", "")), _number(value.get("bot"))
    me = _bot_name(candidates, bot, bot_names)

    def label(name: str) -> str:
        return "the room" if name == ROOM else f"{name} (the bot)" if name == me else name

    ranked = sorted(candidates.items(), key=lambda kv: -kv[1])
    shares = tuple(Share(label(n), p, n == to, n == me) for n, p in ranked[:SHOWN])
    told = _contributions(value.get("top"))
    said = _contributions(value.get("content"))
    who = label(me) if me is not None else "the bot"
    return AddresseeView(
        shares=shares,
        others=max(0, len(ranked) - SHOWN),
        bot=bot if me is None else None,
        threshold=_number(value.get("threshold")),
        because=f"to {label(to)} because: {told}" if told and to else "",
        content=f"what was said, for {who}: {said}" if said else "",
    )


def seat_view(value: Any) -> SeatView | None:
    """The ``seat`` entry as a view; None when it is not a mapping with a probability."""
    if not isinstance(value, Mapping) or (p := _number(value.get("p"))) is None:
        return None
    told = _contributions(value.get("top"))
    said = _contributions(value.get("content"))
    return SeatView(p, _number(value.get("short")), f"because: {told}" if told else "",
                    f"what was said: {said}" if said else "")


def unreadable(key: str, value: Any) -> str:
    shown = repr(value)
    return f"{key} (unreadable): {shown if len(shown) <= 200 else shown[:199] + '…'}"


def model_lines(features: Mapping[str, Any], bot_names: Collection[str] = ()) -> list[list[str]]:
    """Each model in the trace as [summary, because…]; nothing for a trace without them.

    An entry the views cannot read is shown as it was stored, under its key."""
    told: list[list[str]] = []
    for key in KEYS:
        if key not in features:
            continue
        value = features[key]
        view = addressee_view(value, bot_names) if key == ADDRESSEE else seat_view(value)
        told.append(view.lines() if view is not None else [unreadable(key, value)])
    return told


def card_parts(
    features: Mapping[str, Any], bot_names: Collection[str] = ()
) -> tuple[dict[str, Any], list[str]]:
    """The playground card's share: {"addressee": bars and notes | None, "seat": … | None},
    and the lines of an entry that could not be read (for the card's list of features)."""
    addressee = addressee_view(features.get(ADDRESSEE), bot_names)
    seat = seat_view(features.get(SEAT))
    parts = {ADDRESSEE: addressee.card() if addressee is not None else None,
             SEAT: seat.card() if seat is not None else None}
    odd = [unreadable(k, features[k]) for k in KEYS if k in features and parts[k] is None]
    return parts, odd
