"""Scoring the addressee and seat models on labelled chats: `kuuki eval addressee`.

Accuracy counts every message with exactly one gold addressee (a person or the room): the
model is right when its most likely candidate is that one; a gold addressee that is not a
candidate at all counts as a miss. The baselines read the same messages: the previous
speaker other than the author; a candidate named at the start of the text, else the room;
and chance (one over the number of candidates, the room included).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from kuuki.conversation.ircdata import read_annotation, read_ascii, split_files
from kuuki.conversation.mrmp import CorpusError, read_split
from kuuki.decide.models.addressee import AddresseeModel
from kuuki.decide.models.cues import START
from kuuki.decide.models.features import Context
from kuuki.decide.models.seat import SeatModel
from kuuki.decide.models.turns import ROOM, Labelled, Turn, irc_chat, mrmp_chat
from kuuki.decide.training.learn import SILENT, SILENT_NAMES


@dataclass(frozen=True, slots=True)
class AddresseeScore:
    corpus: str
    messages: int
    accuracy: float
    previous_other: float
    name_start: float
    chance: float
    room_share: float  # of the gold labels

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def read_chats(directory: Path) -> tuple[str, list[Labelled]]:
    """An IRC split folder (annotated logs) or an MRMP dialogues/split folder."""
    pairs = split_files(directory)
    if pairs:
        return "irc", [irc_chat(a.name, read_ascii(a), read_annotation(b)) for a, b in pairs]
    try:
        return "mrmp", [mrmp_chat(d) for d in read_split(directory)]
    except CorpusError as exc:
        raise CorpusError(
            f"{directory}: neither an IRC split (X.ascii.txt + X.annotation.txt) nor MRMP "
            f"dialogues (*.json): {exc}"
        ) from exc


def score_addressee(model: AddresseeModel, chats: Sequence[Labelled], corpus: str
                    ) -> AddresseeScore:
    hits = prev = start = 0
    chance = 0.0
    rooms = n = 0
    for chat in chats:
        for i in sorted(chat.labels):
            gold = chat.labels[i]
            result = model.predict(chat.turns, i, chat.names)
            ctx = Context(chat.turns, i, model.window, model.cache, chat.names)
            n += 1
            rooms += gold == ROOM
            hits += result.to == gold
            prev += ctx.last_other == gold
            opens = [k for k in result.candidates if k != ROOM and ctx.named(k) & START]
            start += (opens[0] if opens else ROOM) == gold
            chance += 1.0 / len(result.candidates) if gold in result.candidates else 0.0
    if n == 0:
        raise CorpusError(f"{corpus}: no message with exactly one addressee")
    return AddresseeScore(corpus, n, hits / n, prev / n, start / n, chance / n, rooms / n)


@dataclass(frozen=True, slots=True)
class SeatScore:
    pairs: int  # labelled messages from others, each giving one positive and one negative
    auc: float  # seat p: "addressed to the seat" above "addressed to the third person"
    silent_mean: float  # mean p of a member who never spoke (in `always`)
    mean_p: float  # mean p over every (message, live seat)


def score_seat(addressee: AddresseeModel, seat: SeatModel, chats: Sequence[Labelled]
               ) -> SeatScore:
    """MRMP-style chats: for each labelled message, p of its addressee's seat against p of
    the third person's seat; and p of a silent fourth member."""
    pos: list[float] = []
    neg: list[float] = []
    silent: list[float] = []
    every: list[float] = []
    for chat in chats:
        names = {**chat.names, SILENT: SILENT_NAMES}
        people = set(chat.names)
        for i in range(len(chat.turns)):
            author = chat.turns[i].speaker
            result = addressee.predict(chat.turns, i, names, always=(SILENT,))
            ps = {p: seat.predict(chat.turns, i, p, names, result).p
                  for p in sorted(people - {author})}
            every += ps.values()
            silent.append(seat.predict(chat.turns, i, SILENT, names, result).p)
            gold = chat.labels.get(i)
            if gold in ps and len(ps) == 2:
                third = next(p for p in ps if p != gold)
                pos.append(ps[gold])
                neg.append(ps[third])
    return SeatScore(len(pos), auc(pos, neg), float(np.mean(silent)), float(np.mean(every)))


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """P(a positive scores above a negative), ties counting half."""
    if not pos or not neg:
        return float("nan")
    a = np.asarray(pos)
    b = np.sort(np.asarray(neg))
    below = np.searchsorted(b, a, side="left")
    equal = np.searchsorted(b, a, side="right") - below
    return float((below + 0.5 * equal).sum() / (len(a) * len(b)))


def run_eval_addressee(dirs: Sequence[Path], as_json: bool, with_seat: bool, out: TextIO,
                       speed: bool = False) -> int:
    """Print each folder's accuracy beside the baselines (and the seat's AUC with --seat;
    with --speed, the cost of both models per message on its first chat instead)."""
    model = AddresseeModel.shipped()
    for directory in dirs:
        corpus, chats = read_chats(directory)
        if speed:
            s = measure_speed(chats[0])
            print(json.dumps({"dir": str(directory), **asdict(s)}) if as_json else
                  f"{directory}: both models per message, 50-message buffer, {s.messages} "
                  f"messages: mean {s.mean_us:.0f} µs, median {s.median_us:.0f} µs, p99 "
                  f"{s.p99_us:.0f} µs (20M additions in a Python loop: {s.loop_20m_s:.2f} s)",
                  file=out)
            continue
        score = score_addressee(model, chats, corpus)
        row: dict[str, object] = {"dir": str(directory), **score.as_dict()}
        if with_seat and corpus == "mrmp":  # the seat's AUC needs three-person chats
            row["seat"] = asdict(score_seat(model, SeatModel.shipped(), chats))
        if as_json:
            print(json.dumps(row), file=out)
            continue
        print(f"{directory} ({corpus}): {score.messages} messages with one addressee "
              f"({score.room_share:.1%} to the room)", file=out)
        for name, value in (("model", score.accuracy), ("previous other speaker",
                            score.previous_other), ("name at the start, else room",
                            score.name_start), ("chance", score.chance)):
            print(f"  {name:<30} {value:6.1%}", file=out)
        seat = row.get("seat")
        if isinstance(seat, dict):
            print(f"  seat AUC (to the seat vs to the third) {seat['auc']:.3f} over "
                  f"{seat['pairs']} messages; mean p {seat['mean_p']:.3f}, of a member who "
                  f"never spoke {seat['silent_mean']:.3f}", file=out)
    return 0


@dataclass(frozen=True, slots=True)
class Speed:
    messages: int
    mean_us: float
    median_us: float
    p99_us: float
    loop_20m_s: float  # 20 million additions in a Python loop: this machine's pace


def measure_speed(chat: Labelled, messages: int = 2000, buffer: int = 50) -> Speed:
    """Both models on every new message of a sliding ``buffer``, as a live channel runs
    them: the chat's turns replayed (with times) ``messages`` times over, a silent bot in
    ``always`` and in the seat; the first 200 messages warm the caches."""
    from time import perf_counter

    start = perf_counter()
    total = 0
    for k in range(20_000_000):
        total += k
    loop = perf_counter() - start
    addressee, seat = AddresseeModel.shipped(), SeatModel.shipped()
    names = {**chat.names, SILENT: SILENT_NAMES}
    window: list[Turn] = []
    times: list[float] = []
    for k in range(messages + 200):
        t = chat.turns[k % len(chat.turns)]
        window.append(Turn(t.speaker, t.text, 10.0 * k))
        if len(window) > buffer:
            window.pop(0)
        i = len(window) - 1
        start = perf_counter()
        result = addressee.predict(window, i, names, always=(SILENT,))
        seat.predict(window, i, SILENT, names, result)
        times.append(perf_counter() - start)
    kept = sorted(times[200:])
    return Speed(len(kept), 1e6 * float(np.mean(kept)), 1e6 * kept[len(kept) // 2],
                 1e6 * kept[int(0.99 * len(kept))], loop)
