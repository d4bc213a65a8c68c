"""Training the reply-parent scorer on the Ubuntu IRC train split (numpy only).

Two rounds, so the model learns from the kind of conversation structure it will see at
run time (its own earlier decisions, not the annotators'):

1. features computed with the gold links of earlier messages -> model A;
2. features recomputed while model A disentangles each file online -> model B, trained
   on both rounds' examples.

The loss is the listwise one of Kummerfeld et al.: minus the log of the total softmax
probability of a message's gold parents among its candidates. Everything is seeded, so
the same data gives the same weights file.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import numpy.typing as npt

from kuuki.conversation.disentangler import DEFAULT_WINDOW, irc_minutes, irc_turn
from kuuki.conversation.features import FEATURE_NAMES, N_FEATURES, ChannelFeatures
from kuuki.conversation.ircdata import (
    ANNOTATED_FROM,
    IrcLine,
    file_embeddings,
    read_annotation,
    read_ascii,
    split_files,
)
from kuuki.conversation.metrics import clusters
from kuuki.conversation.model import DisentanglerModel
from kuuki.conversation.similarity import fit_projection, listwise, reply_pairs
from kuuki.embed import Embedder

FloatArray = npt.NDArray[np.float32]
# Batch embeddings of the corpus files are kept here between runs (keyed by content).
EMBED_CACHE = Path(tempfile.gettempdir()) / "kuuki_emb"


@dataclass(slots=True)
class LogFile:
    name: str
    lines: list[IrcLine]
    gold: dict[int, list[int]]
    vectors: FloatArray

    @property
    def annotated_from(self) -> int:
        """First annotated line: 1000 in the Ubuntu files, 0 in channel-two's."""
        return min(self.gold, default=ANNOTATED_FROM)


def load_split(
    split_dir: Path,
    embedder: Embedder | None,
    cache_dir: Path | None = EMBED_CACHE,
    limit: int | None = None,
) -> list[LogFile]:
    """Every annotated file of a split, embedded in batches (zero vectors without embedder)."""
    out = []
    for ascii_path, ann_path in split_files(split_dir)[:limit]:
        lines = read_ascii(ascii_path)
        vectors = (
            file_embeddings(lines, embedder, cache_dir)
            if embedder is not None
            else np.zeros((len(lines), 1), np.float32)
        )
        out.append(LogFile(ascii_path.name, lines, read_annotation(ann_path), vectors))
    return out


@dataclass(slots=True)
class Examples:
    x: FloatArray  # (M, C, F) candidate features, zero padded
    valid: npt.NDArray[np.bool_]  # (M, C)
    gold: npt.NDArray[np.bool_]  # (M, C)
    # (M, C) candidates in the message's gold conversation: its gold parents, and every
    # other earlier message of that conversation (self when it starts one)
    conv: npt.NDArray[np.bool_]


def spread_minutes(minutes: Sequence[float], rng: np.random.Generator) -> list[float]:
    """Times with seconds for a minute-only log: each minute's lines get sorted uniform
    offsets within it (seeded), as a live platform's clock would give them."""
    out = list(minutes)
    k = 0
    while k < len(out):
        end = k
        while end < len(out) and out[end] == out[k]:
            end += 1
        offsets = np.sort(rng.random(end - k))
        for j in range(k, end):
            out[j] += float(offsets[j - k])
        k = end
    return out


def training_minutes(
    files: Sequence[LogFile], seed: int, spread: float = 0.5
) -> dict[str, list[float]]:
    """Each file's line times for training: a ``spread`` share of the minute-only files
    (chosen with ``seed``) get seconds (:func:`spread_minutes`), the rest stay whole.

    The Ubuntu training logs give minutes only, while platforms and other logs give
    seconds; a model that saw only whole minutes reads a few seconds' gap as nothing it
    knows. Half and half keeps it at home on both.
    """
    rng = np.random.default_rng(seed)
    out = {}
    for f in files:
        minutes = irc_minutes(f.lines)
        whole = all(m == int(m) for m in minutes)
        pick = rng.random() < spread
        out[f.name] = spread_minutes(minutes, rng) if whole and pick else minutes
    return out


def collect(
    files: Sequence[LogFile],
    model: DisentanglerModel | None,
    window: int = DEFAULT_WINDOW,
    proj: FloatArray | None = None,
    times: dict[str, list[float]] | None = None,
) -> Examples:
    """Feature tensors of every annotated message whose gold parent is in the window.

    With ``model=None`` earlier messages are linked to their gold parent (the latest one),
    unannotated context lines to their addressee's last message or to themselves; with a
    model, every message is linked where that model puts it.
    """
    xs: list[FloatArray] = []
    golds: list[npt.NDArray[np.bool_]] = []
    convs: list[npt.NDArray[np.bool_]] = []
    for f in files:
        conv_of = {m: c for c, members in enumerate(clusters(f.gold, 0)) for m in members}
        state = ChannelFeatures(window=window, dim=f.vectors.shape[1], proj=proj)
        minutes = times[f.name] if times is not None else irc_minutes(f.lines)
        start = f.annotated_from
        for k, ln in enumerate(f.lines):
            turn = irc_turn(ln, minutes[k], f.vectors[k])
            cand, x = state.features(turn)
            gold = f.gold.get(k) if k >= start else None
            if gold is not None:
                mask = np.isin(cand, gold)
                if mask.any():
                    xs.append(x)
                    golds.append(mask)
                    mine = conv_of[k]
                    same = np.array([conv_of.get(int(c), -1) == mine for c in cand[1:]])
                    same = np.concatenate([[k in gold], same]) if len(same) else mask[:1]
                    convs.append(same | mask)
            if model is not None:
                parent = int(cand[int(np.argmax(model.scores(x)))])
            elif gold is not None:
                parent = max(gold)
            else:
                parent = _context_parent(x, cand)
            state.commit(turn, parent)
    c = max((len(x) for x in xs), default=window + 1)
    m = len(xs)
    out = Examples(
        np.zeros((m, c, N_FEATURES), np.float32),
        np.zeros((m, c), bool),
        np.zeros((m, c), bool),
        np.zeros((m, c), bool),
    )
    for r, (x, g, v) in enumerate(zip(xs, golds, convs, strict=True)):
        out.x[r, : len(x)] = x
        out.valid[r, : len(x)] = True
        out.gold[r, : len(x)] = g
        out.conv[r, : len(x)] = v
    return out


def _context_parent(x: FloatArray, cand: npt.NDArray[np.int64]) -> int:
    col = FEATURE_NAMES.index("lead_latest")
    hits = np.flatnonzero(x[:, col] > 0)
    return int(cand[hits[0]]) if len(hits) else int(cand[0])


def fit(
    ex: Examples,
    *,
    hidden: int = 64,
    epochs: int = 12,
    lr: float = 2e-3,
    batch: int = 256,
    l2: float = 1e-5,
    seed: int = 0,
    conv_weight: float = 0.0,
    log: Callable[[str], None] | None = None,
) -> DisentanglerModel:
    """Adam on the listwise loss; deterministic for a given seed and data.

    With ``conv_weight`` the loss adds that much of the same listwise loss over the
    message's gold *conversation* (any earlier message of it, or itself when it starts
    one): a parent in the right conversation keeps the conversation whole even when it
    is not the annotated parent, and that is what conversation-level scores count.
    """
    rng = np.random.default_rng(seed)
    rows = ex.x[ex.valid]
    mean = rows.mean(axis=0, dtype=np.float64).astype(np.float32)
    std = rows.std(axis=0, dtype=np.float64).astype(np.float32)
    std[std < 1e-3] = 1.0
    model = DisentanglerModel.init(hidden, rng, mean, std)
    z_all = ((ex.x - mean) / std).astype(np.float32)
    z_all[~ex.valid] = 0.0
    params = model.params()
    m1 = {k: np.zeros_like(v) for k, v in params.items()}
    m2 = {k: np.zeros_like(v) for k, v in params.items()}
    step = 0
    n = len(z_all)
    for epoch in range(epochs):
        order = rng.permutation(n)
        total = 0.0
        rate = lr * (0.5 ** max(0, epoch - epochs // 2))  # halve each late epoch
        for s in range(0, n, batch):
            idx = order[s : s + batch]
            z, valid, gold = z_all[idx], ex.valid[idx], ex.gold[idx]
            conv = ex.conv[idx] if conv_weight > 0 else None
            loss, grads = _loss_grad(model, z, valid, gold, conv, conv_weight)
            total += loss * len(idx)
            step += 1
            for k, p in params.items():
                g = (grads[k] + l2 * p).astype(np.float32)
                m1[k] = (0.9 * m1[k] + 0.1 * g).astype(np.float32)
                m2[k] = (0.999 * m2[k] + 0.001 * g * g).astype(np.float32)
                mh = m1[k] / (1 - 0.9**step)
                vh = m2[k] / (1 - 0.999**step)
                p -= (rate * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)
        if log is not None:
            log(f"epoch {epoch + 1}/{epochs} loss {total / n:.4f}")
    # Features that never varied in training (e.g. platform reply references, absent from
    # IRC) must not contribute through their random initial weights.
    dead = rows.std(axis=0) < 1e-6
    model.w[dead] = 0.0
    model.w1[dead] = 0.0
    return model


def _loss_grad(
    model: DisentanglerModel,
    z: FloatArray,
    valid: npt.NDArray[np.bool_],
    gold: npt.NDArray[np.bool_],
    conv: npt.NDArray[np.bool_] | None = None,
    conv_weight: float = 0.0,
) -> tuple[float, dict[str, FloatArray]]:
    b, c, f = z.shape
    z2 = z.reshape(b * c, f)  # plain 2-D matrix products: BLAS does the work
    h = np.tanh(z2 @ model.w1 + model.b1)
    s = (z2 @ model.w + h @ model.v).reshape(b, c)
    p, q, nll = listwise(s, valid, gold)
    loss = float(nll.mean())
    dscore = p - q
    if conv is not None:
        _, qc, nll_c = listwise(s, valid, conv)
        loss += conv_weight * float(nll_c.mean())
        dscore = dscore + conv_weight * (p - qc)
    ds = (dscore / b).astype(np.float32).reshape(b * c)  # d loss / d score
    dpre = np.outer(ds, model.v) * (1.0 - h * h)
    grads = {"w": z2.T @ ds, "v": h.T @ ds, "w1": z2.T @ dpre, "b1": dpre.sum(axis=0)}
    return loss, grads


def fit_ensemble(
    ex: Examples,
    *,
    members: int,
    seed: int,
    hidden: int,
    epochs: int,
    conv_weight: float = 0.0,
    log: Callable[[str], None] | None = None,
) -> DisentanglerModel:
    """``members`` models from consecutive seeds, averaged into one (see ``average``)."""
    models = [
        fit(ex, hidden=hidden, epochs=epochs, seed=seed + k, conv_weight=conv_weight, log=log)
        for k in range(members)
    ]
    return DisentanglerModel.average(models)


def train(
    data_dir: Path,
    out_path: Path,
    *,
    embedder: Embedder,
    seed: int = 0,
    hidden: int = 128,
    epochs: int = 20,
    members: int = 3,
    window: int = DEFAULT_WINDOW,
    spread: float = 0.5,
    conv_weight: float = 0.0,
    limit: int | None = None,
    out: TextIO = sys.stderr,
) -> DisentanglerModel:
    """Train on ``data_dir/train`` and write the weights to ``out_path``.

    The defaults made the shipped ``weights.npz``, and rewrite it bit for bit on the same
    machine (run single-threaded, ``OPENBLAS_NUM_THREADS=1``, on the shipped embedding
    table); another machine's sums round differently, and how far Adam's epochs carry that
    is not measured (docs/decisions.md, "Issue 33"). ~7 minutes on one core (~14 on a
    busy machine).
    """

    def log(msg: str) -> None:
        print(msg, file=out, flush=True)

    files = load_split(data_dir / "train", embedder, limit=limit)
    log(f"{len(files)} train files, {sum(len(f.lines) for f in files)} lines")
    proj = fit_projection(*reply_pairs(files, window), seed=seed, log=log)
    times = training_minutes(files, seed, spread)
    first = collect(files, None, window, proj, times)
    log(f"round 1: {len(first.x)} examples (gold structure)")
    model_a = fit_ensemble(first, members=members, seed=seed, hidden=hidden, epochs=epochs,
                           conv_weight=conv_weight, log=log)
    model_a.proj = proj
    second = collect(files, model_a, window, proj, times)
    log(f"round 2: {len(second.x)} examples (model A's structure)")
    both = _joined(first, second)
    del first, second
    model = fit_ensemble(both, members=members, seed=seed + 100, hidden=hidden, epochs=epochs,
                         conv_weight=conv_weight, log=log)
    model.proj = proj
    out_path.parent.mkdir(parents=True, exist_ok=True)
    model.save(out_path)
    log(f"wrote {out_path}")
    return model


def _joined(first: Examples, second: Examples) -> Examples:
    """Both rounds' examples, as one set."""
    return Examples(
        np.concatenate([first.x, second.x]),
        np.concatenate([first.valid, second.valid]),
        np.concatenate([first.gold, second.gold]),
        np.concatenate([first.conv, second.conv]),
    )
