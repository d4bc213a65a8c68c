"""`kuuki addressee FILE`: who each message of a transcript is for, by the learned model.

One JSON line per posted message, channel by channel in file order:
``{"id": ..., "to": <participant name or "room">, "p": ..., "candidates": {name: p, ...}}``.
The persona (the setup line's bot, else the settings' persona) is always a candidate; a
platform reply (``reply_to``) is the turn's parent, ``mentions`` its mentions. The file is
read as `kuuki replay` reads it (`read_for_command`: a bad line stops the command, or is
skipped and said with ``--skip-bad-lines``); the lines it has no use for (edits, deletes,
reactions, expect lines) are counted on stderr, and a file with no message is refused.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from kuuki.decide.models.addressee import AddresseeModel
from kuuki.decide.models.turns import Turn
from kuuki.domain import EventKind, Message
from kuuki.errors import KuukiError
from kuuki.replay.transcript import Transcript, apply_setup, read_for_command
from kuuki.settings import Settings
from kuuki.text.wording import plural


def transcript_turns(messages: Sequence[Message], bot: str, aliases: Sequence[str]
                     ) -> tuple[list[Turn], dict[str, list[str]]]:
    """One channel's messages as turns (keys are user ids) and the names of everyone in it."""
    names: dict[str, list[str]] = {bot: [bot, *aliases]}
    index: dict[str, int] = {}
    for m in messages:
        names.setdefault(m.user.id, [m.user.name])
    by_name = {n.casefold(): k for k, ns in names.items() for n in ns}
    turns: list[Turn] = []
    for m in messages:
        parent = index.get(m.reply_to) if m.reply_to is not None else None
        mentions = tuple(dict.fromkeys(
            k for k in (by_name.get(x.casefold(), x if x in names else "") for x in m.mentions)
            if k))
        turns.append(Turn(m.user.id, m.text, m.ts.timestamp(), parent, mentions))
        index[m.id] = len(turns) - 1
    return turns, names


def run_addressee(settings: Settings, path: Path, out: TextIO,
                  model: AddresseeModel | None = None, *, skip_bad_lines: bool = False,
                  err: TextIO | None = None) -> int:
    err = err or sys.stderr
    transcript = read_for_command(path, skip_bad_lines=skip_bad_lines, err=err)
    settings = apply_setup(settings, transcript)
    bot = settings.persona.name
    channels = _posted(transcript, err)
    model = model or AddresseeModel.shipped()
    for messages in channels.values():
        turns, names = transcript_turns(messages, bot, settings.persona.aliases)
        for i, m in enumerate(messages):
            r = model.predict(turns, i, names, always=(bot,))
            shown = {names[k][0] if k in names else k: round(p, 4)
                     for k, p in r.candidates.items()}
            to = names[r.to][0] if r.to in names else r.to
            line = {"id": m.id, "to": to, "p": round(r.p, 4), "candidates": shown}
            print(json.dumps(line, ensure_ascii=False), file=out)
    return 0


def _posted(transcript: Transcript, err: TextIO) -> dict[str, list[Message]]:
    """The posted messages by channel; the other lines counted on ``err``; none is an error."""
    channels: dict[str, list[Message]] = {}
    for e in transcript.events:
        if e.kind is EventKind.POSTED and e.message is not None:
            channels.setdefault(e.channel.id, []).append(e.message)
    other = len(transcript.events) - sum(len(m) for m in channels.values())
    unused = [plural(n, what) for n, what in ((other, "edit, delete or reaction line"),
                                             (len(transcript.expectations), "expect line"))
              if n]
    if not channels:
        raise KuukiError(f"{transcript.path}: no messages, only {' and '.join(unused)}")
    if unused:
        err.write(f"kuuki: {transcript.path}: {' and '.join(unused)} not read (who a "
                  "message is for is read from the posted messages)\n")
    return channels
