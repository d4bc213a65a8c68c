"""The reply-tuned similarity: fitted on reply pairs, carried by the weights file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kuuki.conversation.features import N_FEATURES
from kuuki.conversation.model import DisentanglerModel
from kuuki.conversation.similarity import fit_projection


def _replies(n: int, dim: int, seed: int) -> tuple[np.ndarray, ...]:
    """Messages whose parent is a fixed rotation of them, among random candidates."""
    turn = np.linalg.qr(np.random.default_rng(99).standard_normal((dim, dim)))[0]
    turn = turn.astype(np.float32)
    rng = np.random.default_rng(seed)
    mine = rng.standard_normal((n, dim)).astype(np.float32)
    mine /= np.linalg.norm(mine, axis=1, keepdims=True)
    cands = rng.standard_normal((n, 6, dim)).astype(np.float32)
    cands /= np.linalg.norm(cands, axis=2, keepdims=True)
    where = rng.integers(0, 6, n)
    cands[np.arange(n), where] = mine @ turn.T
    gold = np.zeros((n, 6), bool)
    gold[np.arange(n), where] = True
    return mine, cands, gold, np.ones((n, 6), bool)


def _hits(proj: np.ndarray, mine: np.ndarray, cands: np.ndarray, gold: np.ndarray) -> float:
    score = np.einsum("bld,bd->bl", cands, mine @ proj.T)
    return float(gold[np.arange(len(gold)), score.argmax(axis=1)].mean())


def test_fitted_similarity_finds_parents_plain_cosine_misses() -> None:
    train = _replies(2000, 8, seed=1)
    fresh = _replies(500, 8, seed=2)  # the same reply relation, other messages
    proj = fit_projection(*train, seed=0, epochs=60)
    again = fit_projection(*train, seed=0, epochs=60)
    np.testing.assert_array_equal(proj, again)
    eye = np.eye(8, dtype=np.float32)
    assert _hits(proj, *fresh[:3]) > _hits(eye, *fresh[:3]) + 0.3


def test_weights_file_carries_the_projection_and_ignores_it_for_other_dims(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(0)
    f = N_FEATURES
    model = DisentanglerModel.init(4, rng, np.zeros(f, np.float32), np.ones(f, np.float32))
    model.proj = np.eye(16, dtype=np.float32) * 2
    model.save(tmp_path / "w.npz")
    back = DisentanglerModel.load(tmp_path / "w.npz")
    assert back.proj is not None and np.array_equal(back.proj, model.proj)
    assert back.projection(16) is not None and back.projection(512) is None
