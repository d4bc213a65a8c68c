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
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kuuki.embed import Embedder
from kuuki.errors import TranscriptError

ANNOTATED_FROM = 1000

_TIME_RE = re.compile(r"^\[(\d\d):(\d\d)\]\s?(.*)$")
_NICK_RE = re.compile(r"^<([^>]*)>\s?(.*)$")


@dataclass(frozen=True, slots=True)
class IrcLine:
    """One parsed line: minute of day (None for system lines), speaker, body text."""

    index: int
    minute: int | None
    speaker: str
    text: str
    system: bool
    raw: str


def parse_line(index: int, raw: str) -> IrcLine:
    line = raw.rstrip("\n")
    if line.startswith("==="):
        tokens = line.split()
        speaker = tokens[1] if len(tokens) > 1 else ""
        return IrcLine(index, None, speaker, line[3:].strip(), True, line)
    m = _TIME_RE.match(line)
    if m is None:
        return IrcLine(index, None, "", line.strip(), True, line)
    minute = int(m.group(1)) * 60 + int(m.group(2))
    rest = m.group(3)
    n = _NICK_RE.match(rest)
    if n is not None and n.group(1):
        return IrcLine(index, minute, n.group(1), n.group(2), False, line)
    # "[hh:mm] * nick does something" (an action line)
    tokens = rest.split(None, 2)
    if len(tokens) >= 2 and tokens[0] == "*":
        return IrcLine(index, minute, tokens[1], tokens[2] if len(tokens) > 2 else "", False, line)
    return IrcLine(index, minute, "", rest, False, line)


def read_ascii(path: Path) -> list[IrcLine]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TranscriptError(str(path), 0, f"cannot read: {exc}") from exc
    # the tools require no blank lines; a trailing newline is not a message
    return [parse_line(i, raw) for i, raw in enumerate(text.splitlines())]


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
    # the embedder's class is part of the key: a test's stand-in must never poison the cache
    kind = type(embedder).__name__
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
