from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kuuki.conversation.disentangler import Disentangler, disentangle_lines, irc_minutes, irc_turn
from kuuki.conversation.features import FEATURE_NAMES, ChannelFeatures
from kuuki.conversation.history import Post
from kuuki.conversation.ircdata import read_ascii
from kuuki.conversation.model import DisentanglerModel, shipped_model

from .conftest import BigramEmbedder


def _lines(irc_data: Path, n: int) -> list:
    path = sorted((irc_data / "dev").glob("*.ascii.txt"))[0]
    return read_ascii(path)[:n]


def test_shipped_weights_load_and_are_small() -> None:
    model = shipped_model()
    assert model.w1.shape[0] == len(FEATURE_NAMES)
    weights = Path(__file__).resolve().parents[2] / "src/kuuki/conversation/weights.npz"
    assert weights.stat().st_size < 2_000_000


def test_addressing_features() -> None:
    state = ChannelFeatures(window=10)
    state.commit(Post("alice", "anyone know grub?", 0.0), 0)
    state.commit(Post("bob", "hello", 0.0), 1)
    cand, x = state.features(Post("carol", "alice: try grub-install", 1.0))
    col = {n: k for k, n in enumerate(FEATURE_NAMES)}
    assert cand.tolist() == [2, 1, 0]
    assert x[:, col["i_leads_j"]].tolist() == [0, 0, 1]
    assert x[:, col["lead_latest"]].tolist() == [0, 0, 1]
    assert x[:, col["q_j"]].tolist() == [0, 0, 1]
    assert x[:, col["is_self"]].tolist() == [1, 0, 0]
    assert x[:, col["dist1"]].tolist() == [0, 1, 0]


def test_online_decisions_do_not_look_ahead(irc_data: Path) -> None:
    lines = _lines(irc_data, 300)
    vecs = BigramEmbedder().embed([ln.text for ln in lines])
    full = disentangle_lines(lines, vecs, shipped_model())
    prefix = disentangle_lines(lines[:200], vecs[:200], shipped_model())
    assert full[:200] == prefix
    assert all(p <= c for c, p in enumerate(full))


def test_buffer_compaction_keeps_decisions(irc_data: Path) -> None:
    lines = _lines(irc_data, 700)
    vecs = BigramEmbedder().embed([ln.text for ln in lines])
    model = shipped_model()
    big = disentangle_lines(lines, vecs, model)
    small = Disentangler(model)
    small.state = ChannelFeatures(window=50, capacity=0)  # compacts every ~100 messages
    minutes = irc_minutes(lines)
    got = [small.step(irc_turn(ln, minutes[k], vecs[k])).parent for k, ln in enumerate(lines)]
    assert small.state.offset > 0
    assert got == big


def test_probabilities_are_a_distribution() -> None:
    rng = np.random.default_rng(0)
    f = len(FEATURE_NAMES)
    model = DisentanglerModel.init(8, rng, np.zeros(f, np.float32), np.ones(f, np.float32))
    p = model.probabilities(rng.standard_normal((7, f)).astype(np.float32))
    assert p.shape == (7,) and p.sum() == pytest.approx(1.0) and (p > 0).all()


def test_rows_grow_as_the_channel_talks_and_decide_as_if_allocated_at_once(
    irc_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quiet channel holds a few rows, not the full capacity (issue 11: thousands of
    channels); growing and then compacting decides exactly as a full buffer from the start."""
    from kuuki.conversation import history

    lines = _lines(irc_data, 700)
    vecs = BigramEmbedder().embed([ln.text for ln in lines])
    model = shipped_model()
    minutes = irc_minutes(lines)

    def run() -> tuple[list[int], Disentangler]:
        d = Disentangler(model)
        d.state = ChannelFeatures(window=50, dim=vecs.shape[1], capacity=512)
        parents = [d.step(irc_turn(ln, minutes[k], vecs[k])).parent
                   for k, ln in enumerate(lines)]
        return parents, d

    quiet = ChannelFeatures(window=50, dim=vecs.shape[1], capacity=512)
    for k in range(5):
        quiet.commit(irc_turn(lines[k], minutes[k], vecs[k]), k)
    assert quiet.emb.shape[0] < 512 // 4  # rows for what was said, not for 512 messages
    grown, d = run()
    assert d.state.offset > 0  # it grew to the capacity and compacted
    monkeypatch.setattr(history, "_FIRST_ROWS", 10_000)  # all rows up front
    at_once, _ = run()
    assert grown == at_once


def test_unaddressed_lines_lean_towards_joining_a_conversation() -> None:
    model = shipped_model()
    turns = [Post("alice", "my wifi keeps dropping", 0.0), Post("bob", "which card?", 1.0)]

    def probs(weight: float, text: str) -> np.ndarray:
        dis = Disentangler(model, dim=8, new_weight=weight)
        for t in turns:
            dis.step(t)
        return dis.score(Post("carol", text, 2.0))[1]

    plain, lower = probs(1.0, "lol"), probs(0.5, "lol")
    odds = (lower[0] / lower[1:].sum()) / (plain[0] / plain[1:].sum())
    assert odds == pytest.approx(0.5, rel=1e-4)
    # a line that names someone keeps the model's own odds
    assert np.allclose(probs(1.0, "alice: try iwconfig"), probs(0.5, "alice: try iwconfig"))
