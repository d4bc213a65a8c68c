"""`kuuki bench seat DIR` on Ubuntu IRC logs: the bot in a real helper's seat.

For each annotated log of an IRC split folder (``X.ascii.txt`` + ``X.annotation.txt``,
Kummerfeld et al. 2019), the *seat* is the participant whose messages others most answer
(the gold links of the annotated part: a message of another person whose parent is the
seat's). The log becomes a transcript as `kuuki bench judge` reads it (times from the
log's minutes, system lines dropped; a 12-hour clock's step back read as 12 hours on),
with the seat as the persona (no aliases, the Ubuntu keywords of the judge bench): its
real lines are the bot's own earlier messages, and the replay runs as `kuuki replay --llm
none` does, in shadow mode unless told otherwise.

Each annotated message by another person with exactly one gold addressee
(kuuki.decide.turns.irc_chat: the speaker of its gold parent, or the room when it starts a
conversation) is judged as in the MRMP seat benchmark (kuuki.bench.seat_metrics): to the
seat, to another person, or to the room; and whether its text names the seat. With
``strip_nick`` a leading ``nick:``/``nick,`` (any participant's nick) is removed from every
line first, so who a message is for must be inferred, as in MRMP.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from kuuki.bench.judge import IRC_SETUP, irc_to_transcript
from kuuki.bench.seat_metrics import Judged, action_after, first_scores, summary
from kuuki.bench.seat_replay import Variant, replay_lines
from kuuki.conversation.ircdata import read_annotation, read_ascii, split_files
from kuuki.decide.addressing.names import normalise, to_hiragana
from kuuki.decide.models.cues import name_bits, name_forms
from kuuki.decide.models.turns import ROOM, Labelled, irc_chat, strip_leading_nick
from kuuki.errors import KuukiError

if TYPE_CHECKING:
    from kuuki.settings import Settings

TARGETS = {
    "replied_or_acked_to_seat": ">= 55 % (leading nick removed)",
    "replied_or_acked_to_other": "<= 5 % (leading nick removed)",
    "named": ">= 95 %",
}


def seat_of(chat: Labelled) -> str:
    """The participant whose messages others most answer (by the gold links); the first
    by name on a tie."""
    answered: Counter[str] = Counter()
    for child, parents in chat.parents.items():
        me = chat.turns[child].speaker
        for p in parents:
            if chat.turns[p].speaker != me:
                answered[chat.turns[p].speaker] += 1
    if not answered:
        raise KuukiError(f"{chat.name}: no gold link between two people: no seat to take")
    return min(answered, key=lambda s: (-answered[s], s))


def transcript_for(path: Path, chat: Labelled, seat: str, strip_nick: bool
                   ) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The log as transcript objects with ``seat`` as the persona, and each turn's
    message id (the transcript's ids are per kept line; the chat's turns are too)."""
    raw = path.read_text(encoding="utf-8", errors="replace").splitlines()
    objs = irc_to_transcript(raw, name=path.name.split(".")[0])
    objs[0] = {"setup": {**IRC_SETUP, "bot": seat, "aliases": []}}
    lines = objs[1:]
    if len(lines) != len(chat.turns):
        raise KuukiError(f"{path}: {len(lines)} messages in the transcript, "
                         f"{len(chat.turns)} turns in the chat")
    nicks = sorted(chat.names)
    for obj in lines:
        if strip_nick:
            obj["text"] = strip_leading_nick(obj["text"], nicks)
    _twelve_hour_clock(lines)
    return objs, {n: obj["id"] for n, obj in enumerate(lines)}


def _twelve_hour_clock(lines: Sequence[dict[str, Any]]) -> None:
    """Some logs keep a 12-hour clock (12:59 then 01:00): from each such step back on, the
    times move on by 12 hours, so the replay keeps every line in time order."""
    offset = timedelta(0)
    before: datetime | None = None
    for obj in lines:
        t = datetime.fromisoformat(obj["t"]) + offset
        if before is not None and t < before - timedelta(hours=11):
            offset += timedelta(hours=12)
            t += timedelta(hours=12)
        obj["t"] = t.isoformat()
        before = t


async def bench_irc_seat(
    settings: Settings, directory: Path, limit: int | None, err: TextIO | None,
    variant: Variant,
) -> dict[str, Any]:
    """Every annotated log of ``directory`` (the first ``limit``) with the bot in its seat."""
    started = time.perf_counter()
    pairs = split_files(directory)[:limit]
    items: list[Judged] = []
    messages = 0
    for ascii_path, ann_path in pairs:
        chat = irc_chat(ascii_path.name, read_ascii(ascii_path), read_annotation(ann_path))
        seat = seat_of(chat)
        objs, ids = transcript_for(ascii_path, chat, seat, variant.strip_nick)
        decisions, timeline = await replay_lines(
            settings, objs, f"{ascii_path.name}:{seat}", shadow=variant.shadow, strict=False)
        texts = [o["text"] for o in objs[1:]]
        items.extend(_judged(chat, seat, ids, texts, decisions, timeline))
        messages += len(chat.turns)
        if err is not None:
            err.write(f"kuuki: {ascii_path.name}: seat {seat}\n")
    return {
        "benchmark": "seat",
        "dir": str(directory),
        "llm": "none",
        "variant": variant.describe(),
        "dialogues": len(pairs),
        "messages": messages,
        "targets": TARGETS,
        "by_gap": [{**summary(items), "seconds": round(time.perf_counter() - started, 1)}],
        "seconds": round(time.perf_counter() - started, 1),
    }


def seat_forms(seat: str, names: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The spellings that name the seat: its nick and the nick without trailing digits
    (``helper2``: ``helper``), but not a spelling that is another participant's own
    nick — in a log where ``ActionParsnip1`` holds the seat while ``ActionParsnip`` also
    speaks, "ActionParsnip: …" names the other one (the gold links agree)."""
    others = {f for key, called in names.items() if key != seat for f in name_forms(called)}
    return tuple(f for f in name_forms(names.get(seat, (seat,))) if f not in others)


def _judged(chat: Labelled, seat: str, ids: dict[int, str], texts: Sequence[str],
            decisions: Sequence[Any], timeline: Any) -> list[Judged]:
    first = first_scores(decisions)
    forms = seat_forms(seat, chat.names)
    out: list[Judged] = []
    for i, label in sorted(chat.labels.items()):
        if chat.turns[i].speaker == seat:
            continue
        mid = ids[i]
        named = name_bits(to_hiragana(normalise(texts[i])), forms) > 0
        out.append(Judged(
            label == seat, first.get(mid), action_after(timeline, mid),
            after_own=i > 0 and chat.turns[i - 1].speaker == seat, named=named,
            room=label == ROOM,
        ))
    return out
