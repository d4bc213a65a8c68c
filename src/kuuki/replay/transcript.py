"""The transcript format (DESIGN §5): JSON Lines, one event per line, in time order.

    {"id": "m1", "t": "2026-01-05T10:00:00+09:00", "channel": "general", "user": "alice",
     "text": "..."}

Optional keys: reply_to, thread, mentions, bot, kind (edit|delete|reaction) with target
(and emoji), channel_visibility. An optional first line {"setup": {...}} sets the persona;
expectation lines ({"after": "m7", "expect": {...}}, or "from"/"to"; see `expect`) are
read into `Transcript.expectations` for `kuuki replay --check`, tests and benchmarks. `t`
is ISO 8601 (from 1970 to 8999) or seconds from the start (0 to 100 years). A bad line
raises TranscriptError naming file and line; the reader can also skip bad lines and report
them, losing nothing else. Bad are also: bytes that are not UTF-8, a message without
`text` (``""`` says it had none), an empty `user` or `id`, and an id used twice (the
engine handles an id once, so the second would silently vanish). `read_for_command` is how
every command that takes a transcript file reads it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from kuuki.domain import Channel, ChatEvent, EventKind, Message, User, Visibility
from kuuki.errors import KuukiError, TranscriptError
from kuuki.replay.expect import Expectation, parse_expectation, unknown_ids
from kuuki.settings import Settings, apply_values, typed_values
from kuuki.text.wording import echoed, plural

DEFAULT_START = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
# Seconds from the start: at most ~100 years. A bigger number (1e308), NaN or a negative
# offset is a broken line, not a time; it must not reach datetime arithmetic (which
# raises OverflowError/ValueError deep in replay instead of naming the line).
MAX_OFFSET_S = 100 * 365.25 * 86400
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
# A setup line's keys and the setting each one sets.
SETUP_KEYS = {
    "bot": "persona.name",
    "aliases": "persona.aliases",
    "language": "persona.language",
    "system_prompt": "persona.system_prompt",
    "keywords": "persona.keywords",
    "emoji": "persona.emoji",
    "judge_mode": "judge.mode",
}
_KINDS = {
    "edit": EventKind.EDITED,
    "delete": EventKind.DELETED,
    "reaction": EventKind.REACTION_ADDED,
}


@dataclass(slots=True)
class Transcript:
    path: str
    setup: dict[str, Any] = field(default_factory=dict)
    events: list[ChatEvent] = field(default_factory=list)
    expectations: list[Expectation] = field(default_factory=list)
    errors: list[TranscriptError] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)


def _parse_time(value: Any, start: datetime, where: tuple[str, int]) -> datetime:
    if isinstance(value, bool):
        raise TranscriptError(*where, "field t: expected ISO 8601 time or seconds")
    if isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError as exc:  # an integer of hundreds of digits (not even printable)
            raise TranscriptError(*where, "field t: a number far too large for seconds") \
                from exc
        if not math.isfinite(seconds):
            raise TranscriptError(*where, f"field t: {value!r} is not a number of seconds")
        if not 0 <= seconds <= MAX_OFFSET_S:
            raise TranscriptError(
                *where, f"field t: {value!r} seconds is out of range (0 to {MAX_OFFSET_S:.0f})"
            )
        return _in_range(start + timedelta(seconds=seconds), where)
    if isinstance(value, str):
        try:
            t = datetime.fromisoformat(value)
        except ValueError as exc:
            raise TranscriptError(*where, f"field t: not an ISO 8601 time: {value!r}") from exc
        return _in_range(t if t.tzinfo else t.replace(tzinfo=UTC), where)
    raise TranscriptError(*where, "field t: expected ISO 8601 time or seconds")


def _in_range(t: datetime, where: tuple[str, int]) -> datetime:
    # The virtual clock runs on past the last line and timers add hours to it: a time at
    # the edge of datetime's range overflows in the middle of a replay.
    if not EARLIEST <= t < LATEST:
        raise TranscriptError(
            *where, f"field t: {t.isoformat()} is outside {EARLIEST.year}-{LATEST.year - 1}"
        )
    return t


def _str_field(obj: dict[str, Any], key: str, where: tuple[str, int], required: bool) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise TranscriptError(*where, f"missing field {key!r}")
        return None
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise TranscriptError(*where, f"field {key}: expected text, got {type(value).__name__}")
    if required and not str(value).strip():
        raise TranscriptError(*where, f"field {key}: empty")
    return str(value)


class TranscriptReader:
    """Turns transcript lines into ChatEvents for one persona."""

    def __init__(self, path: str, bot_name: str | None = None) -> None:
        self.path = path
        self.bot_name = bot_name
        self._start: datetime | None = None
        self._last: datetime | None = None
        self._channels: dict[str, Channel] = {}

    def parse_line(self, raw: str | bytes, lineno: int) -> dict[str, Any] | None:
        where = (self.path, lineno)
        if isinstance(raw, bytes):
            raw = _decode(raw, where)
        if not raw.strip():
            return None
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise TranscriptError(
                *where, f"not valid JSON: {exc.msg} (column {exc.colno})"
            ) from exc
        except RecursionError as exc:  # the decoder recurses once per level of nesting
            raise TranscriptError(*where, "not valid JSON: nested too deeply") from exc
        if not isinstance(obj, dict):
            raise TranscriptError(*where, "expected a JSON object")
        return obj

    def event(self, obj: dict[str, Any], lineno: int) -> ChatEvent:
        where = (self.path, lineno)
        mid = _str_field(obj, "id", where, required=obj.get("kind") is None)
        channel_name = _str_field(obj, "channel", where, required=False) or "general"
        user_name = _str_field(obj, "user", where, required=True)
        assert user_name is not None
        ts = self._time(obj, where)
        channel = self._channel(obj, channel_name, where)
        is_own = self.bot_name is not None and user_name == self.bot_name
        user = User(user_name, user_name, is_bot=bool(obj.get("bot", False)) or is_own)
        if "text" not in obj and obj.get("kind") is None:
            raise TranscriptError(*where, 'missing field \'text\' (write "text": "" for a '
                                  "message with none)")
        text = obj.get("text", "")
        if not isinstance(text, str):
            raise TranscriptError(*where, f"field text: expected text, got {type(text).__name__}")
        mentions = obj.get("mentions", [])
        if not isinstance(mentions, list) or not all(isinstance(m, str) for m in mentions):
            raise TranscriptError(*where, "field mentions: expected a list of names")
        kind_name = obj.get("kind")
        if kind_name is not None:
            return _change(obj, kind_name, channel, mid, ts, user, text, where)
        assert mid is not None
        msg = Message(
            id=mid,
            channel_id=channel.id,
            user=user,
            text=text,
            ts=ts,
            reply_to=_str_field(obj, "reply_to", where, required=False),
            thread=_str_field(obj, "thread", where, required=False),
            mentions=tuple(mentions),
        )
        return ChatEvent(EventKind.POSTED, channel, mid, ts, message=msg, user=user)

    def _time(self, obj: dict[str, Any], where: tuple[str, int]) -> datetime:
        """The line's time: ``t`` is seconds after the first absolute time (or a default
        start) or an absolute time; lines must be in time order."""
        if "t" not in obj:
            raise TranscriptError(*where, "missing field 't'")
        start = self._start or DEFAULT_START
        ts = _parse_time(obj["t"], start, where)
        if self._start is None and not isinstance(obj["t"], int | float):
            self._start = ts
        if self._last is not None and ts < self._last:
            raise TranscriptError(
                *where, "field t: earlier than the line before (not in time order)"
            )
        self._last = ts
        return ts

    def _channel(self, obj: dict[str, Any], name: str, where: tuple[str, int]) -> Channel:
        """The channel a line names (one object per name and visibility)."""
        vis_raw = obj.get("channel_visibility", "public")
        try:
            visibility = Visibility(vis_raw)
        except ValueError as exc:
            raise TranscriptError(
                *where, f"field channel_visibility: expected public, private or dm, got {vis_raw!r}"
            ) from exc
        channel = self._channels.get(name)
        if channel is None or channel.visibility is not visibility:
            channel = Channel(name, name, visibility, platform="transcript")
            self._channels[name] = channel
        return channel


def _decode(raw: bytes, where: tuple[str, int]) -> str:
    try:
        return raw.decode("utf-8-sig" if where[1] == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        raise TranscriptError(
            *where, f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
            "save the file as UTF-8"
        ) from exc


def _change(
    obj: dict[str, Any], kind_name: Any, channel: Channel, mid: str | None, ts: datetime,
    user: User, text: str, where: tuple[str, int],
) -> ChatEvent:
    """An edit, delete or reaction line."""
    if kind_name not in _KINDS:
        raise TranscriptError(
            *where, f"field kind: expected edit, delete or reaction, got {kind_name!r}"
        )
    target = _str_field(obj, "target", where, required=True)
    emoji = _str_field(obj, "emoji", where, required=kind_name == "reaction")
    return ChatEvent(
        kind=_KINDS[kind_name],
        channel=channel,
        event_id=mid or f"{kind_name}:{target}:{where[1]}",
        at=ts,
        target_id=target,
        user=user,
        text=text,
        emoji=emoji,
    )


def read_transcript(
    path: str | Path, *, bot_name: str | None = None, strict: bool = True
) -> Transcript:
    """Read a whole transcript. strict=False collects bad lines in `errors` and goes on."""
    p = Path(path)
    try:
        # Split as bytes: only \n and \r end a line (str.splitlines would also split a
        # message at a raw U+2028 or U+0085 inside its JSON string), and a line of bytes
        # that is not UTF-8 is that line's error, not replaced in silence.
        lines = p.read_bytes().splitlines()
    except OSError as exc:
        raise TranscriptError(str(p), 0, f"cannot be read: {exc.strerror}") from exc
    return parse_lines(lines, str(p), bot_name=bot_name, strict=strict)


def parse_lines(
    lines: Iterable[str | bytes],
    path: str = "<transcript>",
    *,
    bot_name: str | None = None,
    strict: bool = True,
) -> Transcript:
    out = Transcript(path)
    reader = TranscriptReader(path, bot_name)
    pending: list[tuple[int, dict[str, Any]]] = []
    for lineno, raw in enumerate(lines, start=1):
        try:
            obj = reader.parse_line(raw, lineno)
        except TranscriptError as exc:
            if strict:
                raise
            out.errors.append(exc)
            continue
        if obj is None:
            continue
        if "setup" in obj:
            if not isinstance(obj["setup"], dict):
                problem = TranscriptError(path, lineno, "field setup: expected an object")
                if strict:
                    raise problem
                out.errors.append(problem)
                continue
            out.setup = obj["setup"]
            if reader.bot_name is None:
                reader.bot_name = str(obj["setup"].get("bot") or "") or None
            continue
        pending.append((lineno, obj))
    if reader.bot_name is None:
        reader.bot_name = "Kuu"
    first_line: dict[str, int] = {}
    for lineno, obj in pending:
        try:
            if "expect" in obj:
                out.expectations.append(parse_expectation(obj, path, lineno))
                continue
            event = reader.event(obj, lineno)
            if event.event_id in first_line:
                raise TranscriptError(
                    path, lineno, f"id {echoed(event.event_id)!r} is already used on line "
                    f"{first_line[event.event_id]}; every line needs its own id"
                )
            first_line[event.event_id] = lineno
            out.events.append(event)
            out.lines.append(obj)
        except TranscriptError as exc:
            if strict:
                raise
            out.errors.append(exc)
    wrong = unknown_ids(out.expectations, [e.event_id for e in out.events], path)
    if wrong and strict:
        raise wrong[0]
    out.errors.extend(wrong)
    dropped = {e.line for e in wrong}
    out.expectations = [x for x in out.expectations if x.line not in dropped]
    return out


def read_for_command(path: Path, *, skip_bad_lines: bool, err: TextIO) -> Transcript:
    """A transcript file as every command reads it: a bad line stops the command
    (TranscriptError: file, line, what is wrong) or, with ``skip_bad_lines``, is said on
    ``err`` (``kuuki: skipped FILE:LINE: …``) and left out; a file with no message left to
    read is refused."""
    transcript = read_transcript(path, bot_name=None, strict=not skip_bad_lines)
    for problem in transcript.errors:
        err.write(f"kuuki: skipped {problem}\n")
    if not transcript.events:
        if transcript.errors:
            why = f"no line could be read ({plural(len(transcript.errors), 'bad line')} skipped)"
        elif transcript.setup or transcript.expectations:
            only = (["a setup line"] if transcript.setup else []) + (
                [plural(len(transcript.expectations), "expect line")]
                if transcript.expectations else [])
            why = f"no messages, only {' and '.join(only)}"
        else:
            why = "no messages: the file is empty"
        raise KuukiError(f"{path}: {why}")
    return transcript


def iter_jsonl(events: Iterable[dict[str, Any]]) -> Iterator[str]:
    for e in events:
        yield json.dumps(e, ensure_ascii=False)


def apply_setup(settings: Settings, transcript: Transcript) -> Settings:
    """`settings` with the transcript's setup line applied: its values are type-checked
    like kuuki.toml's, and a wrong one is a ConfigError naming the setup key."""
    if not transcript.setup:
        return settings
    source = f"in the setup line of {transcript.path}"
    return apply_values(settings, typed_values(transcript.setup, SETUP_KEYS, source))
