"""Command functions behind ``kuuki disentangle / eval / train / bench`` (wired by the CLI).

Each prints to ``out`` and returns its figures so that callers and tests can check them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np
import numpy.typing as npt

from kuuki.conversation.disentangler import (
    DEFAULT_WINDOW,
    SECOND_PARENT,
    Disentangler,
    disentangle_links,
    irc_minutes,
    irc_turn,
    previous_message_baseline,
)
from kuuki.conversation.ircdata import IrcLine, read_ascii
from kuuki.conversation.metrics import Scorer
from kuuki.conversation.model import DisentanglerModel, shipped_model
from kuuki.conversation.train import LogFile, load_split, train
from kuuki.embed import Embedder, default_embedder
from kuuki.errors import TranscriptError

# Kummerfeld et al. 2019, Table 3 (Ubuntu test split): the rows printed beside ours.
PUBLISHED: dict[str, dict[str, float]] = {
    "previous message": {
        "link_p": 35.7,
        "link_r": 34.4,
        "link_f": 35.0,
        "vi": 66.1,
        "one_to_one": 27.6,
        "exact_p": 0.0,
        "exact_r": 0.0,
        "exact_f": 0.0,
    },
    "feedforward x10 vote": {
        "link_p": 74.9,
        "link_r": 72.2,
        "link_f": 73.5,
        "vi": 91.5,
        "one_to_one": 76.0,
        "exact_p": 36.3,
        "exact_r": 39.7,
        "exact_f": 38.0,
    },
}
_LABELS = (
    ("link_p", "link precision"),
    ("link_r", "link recall"),
    ("link_f", "link F"),
    ("vi", "1 - VI/log2 n"),
    ("one_to_one", "one-to-one"),
    ("exact_p", "exact-match P (2+)"),
    ("exact_r", "exact-match R (2+)"),
    ("exact_f", "exact-match F (2+)"),
)

Predictor = Callable[[LogFile], Sequence[Sequence[int]]]  # parents of every line


def run_disentangle(path: Path, start: int, out: TextIO) -> None:
    """Print ``parent child -`` for every message from line ``start`` on (dataset format).

    ``child child -`` marks a new conversation; a message the model thinks answers two
    earlier ones (second parent probability >= ``SECOND_PARENT``) gets two lines, as in
    the gold annotation.
    """
    lines = read_ascii(path)
    if lines and start >= len(lines):
        problem = f"the file has {len(lines)} lines; --start {start} skips them all"
        raise TranscriptError(str(path), len(lines), problem)
    vectors = _embed_lines(lines, default_embedder())
    parents = disentangle_links(lines, vectors, shipped_model())
    for child in range(start, len(lines)):
        for parent in sorted(parents[child]):
            print(f"{parent} {child} -", file=out)


def evaluate(files: Sequence[LogFile], predict: Predictor) -> dict[str, float]:
    """Pooled scores of ``predict`` against the gold links."""
    scorer = Scorer()
    for f in files:
        parents = predict(f)
        start = f.annotated_from
        auto = {c: list(parents[c]) for c in range(start, len(f.lines))}
        gold = {c: ps for c, ps in f.gold.items() if c >= start}
        scorer.add(gold, auto, start)
    return scorer.results()


def model_predictor(
    model: DisentanglerModel, window: int = DEFAULT_WINDOW, second_parent: float = SECOND_PARENT
) -> Predictor:
    return lambda f: disentangle_links(
        f.lines, f.vectors, model, window=window, second_parent=second_parent
    )


def baseline_predictor(f: LogFile) -> Sequence[Sequence[int]]:
    return [[p] for p in previous_message_baseline(f.lines)]


def run_eval(
    split_dir: Path,
    out: TextIO,
    *,
    baseline: bool = True,
    model: DisentanglerModel | None = None,
    embedder: Embedder | None = None,
) -> dict[str, float]:
    """Score the shipped model (and the previous-message baseline) on every file of a split.

    Returns our figures; with ``baseline`` the baseline's come back too, prefixed
    ``baseline_``. Embeddings are computed per file in batches (and cached in /tmp).
    """
    files = load_split(split_dir, embedder or default_embedder())
    ours = evaluate(files, model_predictor(model or shipped_model()))
    print(
        f"{len(files)} files, {sum(len(f.lines) - f.annotated_from for f in files)} "
        f"annotated messages ({split_dir})",
        file=out,
    )
    _print_table(
        out, "kuuki disentangler", ours, PUBLISHED["feedforward x10 vote"], "paper FF x10 (test)"
    )
    result = dict(ours)
    if baseline:
        base = evaluate(files, baseline_predictor)
        _print_table(
            out, "previous message baseline", base, PUBLISHED["previous message"], "paper (test)"
        )
        result.update({f"baseline_{k}": v for k, v in base.items()})
    return result


def _print_table(
    out: TextIO, title: str, ours: dict[str, float], paper: dict[str, float], paper_label: str
) -> None:
    print(f"{title:<28}{'ours':>8}{paper_label:>22}", file=out)
    for key, label in _LABELS:
        print(f"  {label:<26}{ours[key]:8.1f}{paper[key]:22.1f}", file=out)


def run_train(data_dir: Path, out_path: Path, out: TextIO) -> None:
    """Train on ``data_dir/train`` (seeded, numpy only) and write the weights file."""
    train(data_dir, out_path, embedder=default_embedder(), out=out)


def run_bench(data_dir: Path, out: TextIO) -> dict[str, float]:
    """Disentangle the dev split online, embedding each message as it arrives.

    Prints one JSON line: messages, messages_per_s (this process, one message at a time),
    the link F / one-to-one reached, and how the seconds split (total vs. embedding).
    For a one-core figure run with ``OPENBLAS_NUM_THREADS=1``.
    """
    embedder = default_embedder()
    model = shipped_model()
    files = load_split(data_dir / "dev", None)
    # the timed run must embed afresh: a warm cache would measure lookups, not the model
    fresh = _fresh_embedder(embedder)
    fresh.embed(["warm up"])  # loading the weights is not part of the throughput
    clock = time.perf_counter
    t0 = clock()
    parents_by_file, n, embed_s = _online(files, model, embedder.dim, fresh, clock)
    elapsed = clock() - t0
    # As the engine runs it: messages that have arrived together (up to 32 queued) are
    # embedded in one batch, then linked one by one, each seeing only earlier messages.
    fresh = _fresh_embedder(embedder)
    fresh.embed(["warm up"])
    t1 = clock()
    batched_parents = _batched(files, model, embedder.dim, fresh)
    batched_elapsed = clock() - t1
    scores = evaluate(files, lambda f: parents_by_file[f.name])
    batched_scores = evaluate(files, lambda f: batched_parents[f.name])
    result = {
        "messages": float(n),
        "messages_per_s": n / elapsed,
        "link_f": scores["link_f"],
        "one_to_one": scores["one_to_one"],
        "seconds": elapsed,
        "embedding_seconds": embed_s,
        "messages_per_s_batched32": n / batched_elapsed,
    }
    shown = {
        "messages": n,
        "messages_per_s": round(n / elapsed, 1),
        "link_f": round(scores["link_f"], 2),
        "one_to_one": round(scores["one_to_one"], 2),
        "seconds": round(elapsed, 2),
        "embedding_seconds": round(embed_s, 2),
        "messages_per_s_batched32": round(n / batched_elapsed, 1),
        "link_f_batched32": round(batched_scores["link_f"], 2),
    }
    print(json.dumps(shown), file=out)
    return result


def _online(
    files: list[LogFile], model: DisentanglerModel, dim: int, fresh: Embedder,
    clock: Callable[[], float],
) -> tuple[dict[str, list[list[int]]], int, float]:
    """Each file linked one message at a time, each embedded as it arrives: the parents
    found, the messages seen, and the seconds spent embedding."""
    parents_by_file: dict[str, list[list[int]]] = {}
    n = 0
    embed_s = 0.0
    for f in files:
        dis = Disentangler(model, dim=dim)
        minutes = irc_minutes(f.lines)
        parents = []
        for k, ln in enumerate(f.lines):
            vec = None
            if not ln.system:
                e0 = clock()
                vec = fresh.embed([ln.text])[0]
                embed_s += clock() - e0
            parents.append(dis.step(irc_turn(ln, minutes[k], vec)).parents)
        parents_by_file[f.name] = parents
        n += len(f.lines)
    return parents_by_file, n, embed_s


def _batched(
    files: list[LogFile], model: DisentanglerModel, dim: int, fresh: Embedder
) -> dict[str, list[list[int]]]:
    """Each file linked as the engine runs it: up to 32 queued messages embedded in one
    batch, then linked one by one."""
    batched_parents: dict[str, list[list[int]]] = {}
    for f in files:
        dis = Disentangler(model, dim=dim)
        minutes = irc_minutes(f.lines)
        parents = []
        for start in range(0, len(f.lines), 32):
            chunk = f.lines[start : start + 32]
            texts = [ln.text for ln in chunk if not ln.system]
            vecs = iter(fresh.embed(texts)) if texts else iter(())
            for k, ln in enumerate(chunk, start=start):
                vec = None if ln.system else next(vecs)
                parents.append(dis.step(irc_turn(ln, minutes[k], vec)).parents)
        batched_parents[f.name] = parents
    return batched_parents


def _fresh_embedder(embedder: Embedder) -> Embedder:
    clear = getattr(embedder, "_cache", None)
    if clear is not None:
        clear.clear()
    return embedder


def _embed_lines(lines: Sequence[IrcLine], embedder: Embedder) -> npt.NDArray[np.float32]:
    out = np.zeros((len(lines), embedder.dim), np.float32)
    idx = [k for k, ln in enumerate(lines) if not ln.system]
    if idx:
        out[idx] = embedder.embed([lines[k].text for k in idx])
    return out
