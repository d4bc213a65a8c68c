"""`kuuki replay FILE`: a transcript through the engine on a virtual clock.

Without `--check` it prints one JSON line per decision (DESIGN §5). With `--check` it is a
test of the persona and its thresholds: it evaluates every expectation line of the file,
prints each one that fails with the decisions in its window and their reasons, and exits 1
if any fails. The decisions go to a temporary store unless `--store PATH` keeps them for
`kuuki why`; a line on stderr says which. With `--shadow` the bot posts nothing
(kuuki.engine.act): each line says what it would have done (``"shadow": true``), and only
the file's own lines of the bot are its messages in the conversation.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from kuuki.clock import VirtualClock
from kuuki.domain import User
from kuuki.errors import KuukiError
from kuuki.replay.expect import Failure, Played, check
from kuuki.replay.runner import RecordingOutbox, replay
from kuuki.replay.transcript import Transcript, apply_setup, read_for_command
from kuuki.settings import Settings
from kuuki.settings.urls import mask_raw, path_or_url
from kuuki.text.wording import plural


async def run_replay(
    settings: Settings,
    path: Path,
    *,
    llm: str,
    dump_dir: Path | None = None,
    store: str | None = None,
    skip_bad_lines: bool = False,
    check_expectations: bool = False,
    shadow: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Replay `path`; returns the exit code (1: an expectation failed under `--check`)."""
    from kuuki.app import PromptDumper, build_app

    out = out or sys.stdout
    err = err or sys.stderr
    transcript = _read(path, skip_bad_lines, check_expectations, err)
    settings = apply_setup(settings, transcript)
    clock = VirtualClock(transcript.events[0].at if transcript.events else None)
    bot = User(settings.persona.name, settings.persona.name, is_bot=True)
    timeline = Played()

    def emit(line: dict[str, Any]) -> None:
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        out.flush()

    with contextlib.ExitStack() as stack:
        store_url = path_or_url(store) if store else None
        if store_url is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="kuuki-replay-"))
            store_url = f"sqlite:///{tmp}/replay.sqlite3"
        app = await build_app(
            replace(settings, llm=replace(settings.llm, backend=llm), judge_llm=None),
            clock=clock,
            outbox=RecordingOutbox(clock, bot),
            store=store_url,
            dump=PromptDumper(dump_dir) if dump_dir else None,
            shadow=shadow,
        )
        try:
            if store:  # a store of the user's may hold an earlier run of these ids
                await _refuse_replayed_ids(app.store, transcript, store)
            await replay(
                app.engine, clock, transcript, None if check_expectations else emit, timeline
            )
        finally:
            await app.close()
    _say_where_decisions_went(store, err)
    return _outcome(transcript, timeline, check_expectations, llm, out, err)


def _read(path: Path, skip_bad_lines: bool, check_expectations: bool, err: TextIO) -> Transcript:
    """The transcript as every command reads it (`read_for_command`); refused under
    ``--check`` when it expects nothing."""
    transcript = read_for_command(path, skip_bad_lines=skip_bad_lines, err=err)
    if check_expectations and not transcript.expectations:
        raise KuukiError(
            f"{path}: no expect lines, so --check has nothing to test; add lines such as "
            '{"after": "m1", "expect": {"action": ["reply"]}} (see the README)'
        )
    return transcript


def _outcome(
    transcript: Transcript, timeline: Played, check_expectations: bool, llm: str,
    out: TextIO, err: TextIO,
) -> int:
    """The exit code: 0 without ``--check`` (saying what was not checked), else the report
    and 1 when an expectation failed."""
    if not check_expectations:
        if transcript.expectations:
            err.write(
                f"kuuki: {plural(len(transcript.expectations), 'expect line')} not checked; "
                "add --check to test them\n"
            )
        return 0
    failures = check(transcript.expectations, timeline)
    out.write(report(transcript, failures, llm) + "\n")
    return 1 if failures else 0


def report(transcript: Transcript, failures: list[Failure], llm: str) -> str:
    """The `--check` summary: each failure with its decisions, then one line of totals."""
    lines = [f.describe(transcript.path) for f in failures]
    total = len(transcript.expectations)
    held = total - len({f.line for f in failures})
    verdict = "ok" if not failures else "FAILED"
    lines.append(
        f"{transcript.path}: {held} of {plural(total, 'expectation')} held "
        f"(--llm {llm}): {verdict}"
    )
    return "\n".join(lines)


async def _refuse_replayed_ids(store: Any, transcript: Transcript, where: str) -> None:
    """Stop before replaying ids the store has already taken in.

    The engine handles an event id once, however often it is delivered: replaying a
    transcript (or another with the same ids, such as m1, m2...) into a store that holds
    an earlier run would silently skip those messages and print other decisions.
    """
    seen = await store.inbox.taken_in([e.event_id for e in transcript.events])
    if not seen:
        return
    shown = ", ".join(seen[:5]) + (", ..." if len(seen) > 5 else "")
    raise KuukiError(
        f"--store {mask_raw(where)} already holds {plural(len(seen), 'event')} with the ids "
        f"of {transcript.path} ({shown}), from an earlier run; the bot handles an id once, "
        "so the replay would skip them. Replay into a new --store file, or delete this one"
    )


def _say_where_decisions_went(store: str | None, err: TextIO) -> None:
    if store:
        shown = mask_raw(store)
        err.write(
            f"kuuki: decisions stored in {shown}; see one with "
            f"`kuuki why MESSAGE_ID --store {shown}`\n"
        )
    else:
        err.write(
            "kuuki: decisions were kept in a temporary store, now deleted; "
            "add --store PATH to keep them for `kuuki why`\n"
        )
