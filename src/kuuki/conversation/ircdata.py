"""Reading the Ubuntu IRC disentanglement corpus (Kummerfeld et al., ACL 2019).

Each ``X.ascii.txt`` line is one message (system lines such as ``=== x has joined``
included); ``X.annotation.txt`` holds ``parent child -`` links, ``a a -`` for a message
that starts a conversation. Lines below :data:`ANNOTATED_FROM` are unannotated context.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kuuki.embed import Embedder
from kuuki.embed.static import StaticEmbedder
from kuuki.errors import TranscriptError

ANNOTATED_FROM = 1000  # Ubuntu files; other corpora start where their annotation starts

# An optional "channel YYYY-MM-DD " prefix (Gouravajhala et al.'s channels), then either a
# "===" system line or a "[HH:MM]" / "[HH:MM:SS]" time and the body.
_PREFIX_RE = re.compile(r"^(?:(?P<chan>[^\s\[]+) (?P<date>\d{4}-\d\d-\d\d) )?(?P<rest>.*)$")
_TIME_RE = re.compile(r"^\[(\d\d):(\d\d)(?::(\d\d))?\]\s*(.*)$")
_NICK_RE = re.compile(r"^<([^>\s]+)>\s*(.*)$")
_ACTION_RE = re.compile(r"^\*\s*([^\s*]+)\s+(.*)$")  # "* nick waves", "*nick \twaves"
_NOTICE_RE = re.compile(r"^-([^\s:-]+)(?::\S*)?-\s*(.*)$")  # "-nick:#chan- text"
_RELAY_RE = re.compile(r"^\(([^\s/)]+)(?:/\S*)?\)\s*(.*)$")  # "(nick/#chan) text"

FORMATS = (
    "[HH:MM] <nick> text",
    "[HH:MM:SS] <nick> text",
    "channel YYYY-MM-DD [HH:MM(:SS)] <nick> text",
    "=== system line",
)


@dataclass(frozen=True, slots=True)
class IrcLine:
    """One parsed line: minute of day (None for system lines), speaker, body text.

    ``minute`` has a fraction when the log gives seconds; ``day`` is the date's ordinal
    when the line carries a date (``rust 2018-05-29 [21:20:37] <nick> …``), else None.
    """

    index: int
    minute: float | None
    speaker: str
    text: str
    system: bool
    raw: str
    day: int | None = None


def parse_line(index: int, raw: str) -> IrcLine:
    """Parse one log line; ``ValueError`` (saying what was expected) if it has no known form."""
    line = raw.rstrip("\n").rstrip("\r")
    m = _PREFIX_RE.match(line)
    rest = m.group("rest") if m is not None else line
    day = None
    if m is not None and m.group("date"):
        try:
            day = date.fromisoformat(m.group("date")).toordinal()
        except ValueError as exc:
            raise ValueError(f"bad date {m.group('date')!r}") from exc
    if rest.startswith("==="):
        tokens = rest.split()
        speaker = tokens[1] if len(tokens) > 1 else ""
        return IrcLine(index, None, speaker, rest[3:].strip(), True, line, day)
    t = _TIME_RE.match(rest)
    if t is None:
        shown = line if len(line) <= 60 else line[:57] + "..."
        raise ValueError(
            f"not an IRC log line: {shown!r} (expected one of: {'; '.join(FORMATS)})"
        )
    hh, mm, ss = int(t.group(1)), int(t.group(2)), t.group(3)
    if hh > 23 or mm > 59 or (ss is not None and int(ss) > 59):
        raise ValueError(f"bad time in {line[:40]!r}")
    minute = hh * 60 + mm + (int(ss) / 60.0 if ss is not None else 0.0)
    body = t.group(4).strip()
    for pattern in (_NICK_RE, _ACTION_RE, _NOTICE_RE, _RELAY_RE):
        n = pattern.match(body)
        if n is not None:
            return IrcLine(index, minute, n.group(1), n.group(2).strip(), False, line, day)
    # a timestamped line with no speaker (a server notice): part of the log, no one's message
    return IrcLine(index, minute, "", body, True, line, day)


def read_ascii(path: Path) -> list[IrcLine]:
    """Every line of a log; a line of no known form stops with the file and line number."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TranscriptError(str(path), 0, f"cannot read: {exc}") from exc
    # the annotation numbers lines, so a blank line would shift every link after it;
    # a trailing newline is not a line
    out = []
    for i, raw in enumerate(text.splitlines()):
        if not raw.strip():
            raise TranscriptError(str(path), i + 1, "empty line (every line must be a message)")
        try:
            out.append(parse_line(i, raw))
        except ValueError as exc:
            raise TranscriptError(str(path), i + 1, str(exc)) from exc
    return out


def read_annotation(path: Path) -> dict[int, list[int]]:
    """child -> sorted gold parents (a self-link means "starts a conversation")."""
    parents: dict[int, set[int]] = {}
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        parts = [p for p in raw.split() if p != "-"]
        if not parts:
            continue
        try:
            nums = [int(p) for p in parts]
        except ValueError as exc:
            raise TranscriptError(str(path), lineno, "expected two line numbers") from exc
        child = max(nums)
        others = [n for n in nums if n != child] or [child]
        parents.setdefault(child, set()).update(others)
    return {c: sorted(p) for c, p in parents.items()}


def split_files(split_dir: Path) -> list[tuple[Path, Path]]:
    """(ascii, annotation) pairs of a split directory, sorted by name."""
    pairs = []
    for ascii_path in sorted(split_dir.glob("*.ascii.txt")):
        ann = ascii_path.with_name(ascii_path.name.replace(".ascii.txt", ".annotation.txt"))
        if ann.exists():
            pairs.append((ascii_path, ann))
    return pairs


def file_embeddings(
    lines: Sequence[IrcLine], embedder: Embedder, cache_dir: Path | None = None
) -> npt.NDArray[np.float32]:
    """Embeddings of every line, batched (system lines get a zero vector).

    Training and evaluation embed whole files at once; ``cache_dir`` keeps them between
    runs, keyed by a hash of the texts so a changed file never reuses stale vectors.
    """
    texts = [ln.text for ln in lines]
    key = hashlib.sha1("\n".join(texts).encode("utf-8", "replace")).hexdigest()[:16]
    # the embedder's class is part of the key: a test's stand-in must never poison the cache;
    # so is the static table's fingerprint, so a rebuilt table never reuses stale vectors
    kind = type(embedder).__name__
    if isinstance(embedder, StaticEmbedder):
        kind += f"-{embedder.fingerprint}"
    cached = cache_dir / f"{kind}-{key}.npy" if cache_dir is not None else None
    if cached is not None and cached.exists():
        return np.load(cached)  # type: ignore[no-any-return]
    out = np.zeros((len(lines), embedder.dim), dtype=np.float32)
    idx = [i for i, ln in enumerate(lines) if not ln.system]
    if idx:
        out[idx] = embedder.embed([texts[i] for i in idx])
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        np.save(cached, out)
    return out
