"""`kuuki bench seat DIR`: the bot in a participant's seat of real Japanese three-person chats.

The MRMP corpus (`kuuki.conversation.mrmp`, the ``@name`` marks removed) says whom each
labelled message is for. For every dialogue and each of its three members as the *seat*,
the dialogue becomes a transcript (DESIGN §5): a setup line naming the seat as the bot
(``language`` ja, no aliases: the shipped persona's くう/クウ/空気 are not the member's
names), then every utterance in order with ``t`` = index × gap and ``user`` = its author.
The seat's own real lines stay in as the bot's earlier messages; no line has ``mentions``,
so being addressed must be inferred, as the members did. Each transcript is replayed
through the whole engine on a virtual clock as `kuuki replay FILE --llm none` does (no
model: ambiguous cases take the local stage's own answer, replies carry no text).

Over the labelled messages by the two others (exactly one addressee: the seat or the
other), the figures are (`kuuki.bench.seat_metrics`): the AUC of the first decision line's
``score`` separating "to the seat" from "to the other" (a message whose debounce the next
message superseded has no line: the AUC is given ignoring those and counting them as the
lowest score), and the share of each group after which the bot replied or acked (the
strongest action until the next message, as an ``expect`` line reads it). Then the *silent
fourth member*: the same dialogues with the persona くう, never addressed, and its
replies and acks per 100 messages.

The gap. MRMP has no timestamps. Its messages are short (dev: 9.6 characters on average,
median 9), typed with a Japanese input method at about one character a second, after
reading the line before: some 10-15 s of one member's effort a line, while the other two
read and type too, so a live three-person text chat shows a line about every 15 s
(100 lines in 25 minutes, an evening's chat). 15 s is the default; 10, 30 and 60 s show how
much the figures owe to the engine's timers (the debounce waits 12 s after a question and
30 s after other messages it may speak about, and a newer line ends the wait).

The replays run one after another in this process, each with its own temporary SQLite
store, virtual clock and engine. Interleaving three on the event loop gave the same
decision lines but saved only about a tenth of the time (the engine's work is Python on
one core; only the stores' thread waits overlap), not worth making each replay's timing
depend on the others'; a process pool would take the cores other work on the machine needs.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from kuuki.bench.seat_metrics import Judged, judged, message_id, silent_figures, summary
from kuuki.bench.seat_replay import Variant, replay_lines
from kuuki.conversation.ircdata import split_files
from kuuki.conversation.mrmp import Dialogue, read_split
from kuuki.domain import Decision
from kuuki.errors import KuukiError
from kuuki.settings import Settings

DEFAULT_GAP = 15.0
MAX_GAP = 3600.0
SILENT = "くう"
TARGETS: dict[str, str] = {
    "auc": ">= 0.80",
    "replied_or_acked_to_seat": ">= 55 %",
    "replied_or_acked_to_other": "<= 15 %",
    "silent_per_100": "<= 2",
    "mentioned": ">= 98 %",
}
DEFAULT_VARIANT = Variant()  # shadow mode, no platform mentions, the text as written


def check_gap(gap: float) -> float:
    """``gap`` if it is a usable number of seconds between two lines, else a KuukiError."""
    if not math.isfinite(gap) or not 0 < gap <= MAX_GAP:
        raise KuukiError(f"gap {gap!r}: expected seconds between two lines, "
                         f"more than 0 and at most {MAX_GAP:.0f}")
    return gap


def transcript_lines(dialogue: Dialogue, bot: str, gap: float, *, mentions: bool = False
                     ) -> list[dict[str, Any]]:
    """The dialogue as transcript objects (DESIGN §5) with ``bot`` as the persona: the
    seat (a member, no aliases) or the silent fourth member (`SILENT`, the persona's own
    aliases). ``mentions``: each ``@name`` (removed from the text) is passed as a platform
    mention, as a chat app would report it."""
    setup: dict[str, Any] = {"bot": bot, "language": "ja"}
    if bot in dialogue.speakers:
        setup["aliases"] = []
    lines: list[dict[str, Any]] = [{"setup": setup}]
    for u in dialogue.utterances:
        line: dict[str, Any] = {"id": message_id(u.index), "t": round(u.index * gap, 3),
                                "user": u.speaker, "text": u.text}
        if mentions and u.mention_to:
            line["mentions"] = list(u.mention_to)
        lines.append(line)
    return lines


async def run_gap(settings: Settings, dialogues: Sequence[Dialogue], gap: float,
                  variant: Variant) -> dict[str, Any]:
    """Every seat of every dialogue, then the silent member, at one gap: the figures."""
    started = time.perf_counter()
    items: list[Judged] = []
    silent: list[Decision] = []
    for d in dialogues:
        for seat in d.speakers:
            decisions, timeline = await replay_lines(
                settings, transcript_lines(d, seat, gap, mentions=variant.mentions),
                f"{d.id}:{seat}", shadow=variant.shadow)
            items.extend(judged(d, seat, decisions, timeline, mentions=variant.mentions))
        decisions, _ = await replay_lines(
            settings, transcript_lines(d, SILENT, gap, mentions=variant.mentions),
            f"{d.id}:{SILENT}", shadow=variant.shadow)
        silent.extend(decisions)
    messages = sum(len(d.utterances) for d in dialogues)
    return {
        "gap": gap,
        "replays": len(dialogues) * 4,
        **summary(items),
        "silent_member": silent_figures(silent, messages),
        "seconds": round(time.perf_counter() - started, 1),
    }


async def bench_seat(
    settings: Settings, directory: Path, gaps: Sequence[float] = (DEFAULT_GAP,),
    limit: int | None = None, err: TextIO | None = None, variant: Variant = DEFAULT_VARIANT,
) -> dict[str, Any]:
    """The benchmark over the dialogues of ``directory`` (the first ``limit``), at each gap;
    over the logs of an IRC split folder instead when ``directory`` is one
    (kuuki.bench.seat_irc)."""
    if limit is not None and limit < 1:
        raise KuukiError(f"limit {limit}: expected 1 or more dialogues")
    if split_files(directory):
        from kuuki.bench.seat_irc import bench_irc_seat

        return await bench_irc_seat(settings, directory, limit, err, variant)
    if variant.strip_nick:
        raise KuukiError("--strip-nick is for IRC logs; MRMP has no nicks in its text")
    gaps = [check_gap(g) for g in gaps] or [DEFAULT_GAP]
    started = time.perf_counter()
    dialogues = read_split(directory)[:limit]
    if any(len(d.speakers) != 3 for d in dialogues):
        bad = next(d for d in dialogues if len(d.speakers) != 3)
        raise KuukiError(f"{bad.id}: {len(bad.speakers)} interlocutors; the seat benchmark "
                         "needs three-person chats")
    if SILENT in {s for d in dialogues for s in d.speakers}:
        raise KuukiError(f"a member is called {SILENT!r}, the silent member's name")
    by_gap = []
    for gap in gaps:
        by_gap.append(await run_gap(settings, dialogues, gap, variant))
        if err is not None:
            err.write(f"kuuki: gap {gap:g} s: {by_gap[-1]['replays']} replays in "
                      f"{by_gap[-1]['seconds']} s\n")
    return {
        "benchmark": "seat",
        "dir": str(directory),
        "llm": "none",
        "variant": variant.describe(),
        "dialogues": len(dialogues),
        "messages": sum(len(d.utterances) for d in dialogues),
        "targets": TARGETS,
        "by_gap": by_gap,
        "seconds": round(time.perf_counter() - started, 1),
    }


def print_report(result: dict[str, Any], out: TextIO, *, as_json: bool = False) -> None:
    """The result as one JSON object, or as a table: one column per gap, then the target."""
    if as_json:
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
        return
    gaps = result["by_gap"]
    targets: dict[str, str] = result["targets"]
    rows: list[tuple[str, list[str], str]] = [
        ("messages to the seat (labelled)", [str(g["labelled"]["to_seat"]) for g in gaps], ""),
        ("messages to the other (labelled)", [str(g["labelled"]["to_other"]) for g in gaps], ""),
        ("  no decision line: to seat / other",
         [f"{g['no_decision']['to_seat']} / {g['no_decision']['to_other']}" for g in gaps], ""),
        ("AUC, first decision's score", [_num(g["auc"]["first_decision"]) for g in gaps],
         targets.get("auc", "")),
        ("AUC, no decision = lowest", [_num(g["auc"]["no_decision_lowest"]) for g in gaps],
         targets.get("auc", "")),
        ("replied/acked after: to the seat",
         [_share(g["replied_or_acked"]["to_seat"]) for g in gaps],
         targets.get("replied_or_acked_to_seat", "")),
        ("replied/acked after: to the other",
         [_share(g["replied_or_acked"]["to_other"]) for g in gaps],
         targets.get("replied_or_acked_to_other", "")),
        *_extra_rows(gaps, targets),
        ("silent member: replies+acks /100 msgs",
         [_num(g["silent_member"]["per_100"]) if "silent_member" in g else "-" for g in gaps],
         targets.get("silent_per_100", "") if "silent_member" in gaps[0] else ""),
        ("seconds", [str(g["seconds"]) for g in gaps], ""),
    ]
    head = [f"gap {g['gap']:g} s" if "gap" in g else "" for g in gaps]
    width = max(12, *(len(v) for _, vals, _ in rows for v in vals))
    out.write(f"kuuki bench seat {result['dir']} ({result['variant']}): "
              f"{result['dialogues']} chats, {result['messages']} messages, --llm none, "
              f"{result['seconds']} s\n")
    out.write(f"{'':40}" + "".join(f"{h:>{width + 2}}" for h in head) + "  target\n")
    for label, vals, target in rows:
        out.write(f"{label:40}" + "".join(f"{v:>{width + 2}}" for v in vals)
                  + (f"  {target}" if target else "") + "\n")


def _extra_rows(gaps: Sequence[dict[str, Any]], targets: dict[str, str]
                ) -> list[tuple[str, list[str], str]]:
    """The baseline's shares, and the messages that @-mention or name the seat."""
    rows = [
        (f"{label}: {key.replace('_', ' ')}",
         [_share(g["previous_line_mine"][key]) for g in gaps], "")
        for label, key in (("previous line mine", "to_seat"), ("previous line mine", "to_other"))
    ]
    for key, label in (("mentioned", "replied/acked after an @-mention of it"),
                       ("named", "replied/acked after a message naming it"),
                       ("to_room", "replied/acked after: to the room")):
        if key in gaps[0]["replied_or_acked"]:
            rows.append((label, [_share(g["replied_or_acked"][key]) for g in gaps],
                         targets.get(key, "")))
    return rows


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _share(s: dict[str, Any]) -> str:
    if not s["messages"]:
        return "-"
    return f"{s['spoke']}/{s['messages']} {100 * s['spoke'] / s['messages']:.1f} %"
