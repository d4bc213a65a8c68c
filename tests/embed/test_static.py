"""The default embedder: the static table distilled from USE v3, read with sentencepiece."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import pytest

from kuuki.embed import default_embedder
from kuuki.embed.distill import build_table
from kuuki.embed.static import StaticEmbedder

PAIRS = [
    ("the server is down again", "サーバーがまた落ちた"),
    ("I love cats", "猫が大好き"),
    ("what time is the meeting?", "会議は何時ですか？"),
    ("my build failed with an error", "ビルドがエラーで失敗した"),
    ("see you tomorrow, good night", "また明日、おやすみ"),
    ("thanks for the help", "手伝ってくれてありがとう"),
]


@pytest.fixture(scope="module")
def emb() -> StaticEmbedder:
    return default_embedder()


def test_each_english_line_is_nearest_to_its_japanese_translation(emb: StaticEmbedder) -> None:
    en = emb.embed([a for a, _ in PAIRS])
    ja = emb.embed([b for _, b in PAIRS])
    sims = en @ ja.T
    assert list(sims.argmax(axis=1)) == list(range(len(PAIRS)))
    assert list(sims.argmax(axis=0)) == list(range(len(PAIRS)))
    assert float(np.diag(sims).min()) > 0.3
    off_diagonal = (sims.sum() - np.trace(sims)) / (sims.size - len(sims))
    assert float(np.diag(sims).mean()) - off_diagonal > 0.4


def test_vectors_are_unit_length_stable_and_batch_independent(emb: StaticEmbedder) -> None:
    texts = ["does anyone know how to fix grub?", "雨が降っている", "ok", "lol, really?"]
    batch = emb.compute(texts)
    alone = np.stack([emb.compute([t])[0] for t in texts])
    np.testing.assert_allclose(batch, alone, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert batch.shape == (4, emb.dim) and batch.dtype == np.float32
    np.testing.assert_array_equal(emb.embed(texts), emb.embed(texts))


def test_empty_text_is_the_zero_vector(emb: StaticEmbedder) -> None:
    out = emb.embed(["", "hello"])
    assert not out[0].any() and out[1].any()


def test_cache_is_bounded() -> None:
    small = StaticEmbedder(cache_size=3)
    small.embed([f"message {i}" for i in range(10)])
    assert [small.cached(f"message {i}") for i in (0, 6, 7, 8, 9)] == [False] * 2 + [True] * 3


def test_build_table_reduces_quantizes_and_downweights_frequent_pieces() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((40, 16)).astype(np.float32)
    vectors[0] = 0.0  # a control piece
    prob = np.full(40, 1e-6)
    prob[1] = 0.05  # a very frequent piece ("the")
    rows, scale = build_table(vectors, prob, dim=4, sif_a=1e-5)
    again = build_table(vectors, prob, dim=4, sif_a=1e-5)
    np.testing.assert_array_equal(rows, again[0])
    assert rows.shape == (40, 4) and rows.dtype == np.int8 and scale.shape == (40,)
    assert not rows[0].any()
    weight = np.abs(rows.astype(np.float32) * scale[:, None]).sum(axis=1)
    assert weight[1] < 0.01 * np.median(weight[2:])


def test_shipped_rows_are_mapped_and_embed_as_a_compressed_copy_does(tmp_path: Path) -> None:
    # The shipped table is read through a file mapping (only the pieces looked up become
    # resident); the same table compressed is read whole, and both embed alike.
    shipped = StaticEmbedder()
    assert not shipped._rows.flags.writeable  # a read-only view of the mapped file
    base = shipped._rows
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)
    copy = tmp_path / "table.npz"
    np.savez_compressed(copy, rows=np.array(shipped._rows), scale=shipped._scale)
    whole = StaticEmbedder(copy)
    assert whole._rows.flags.writeable
    texts = ["does anyone know how to fix grub?", "雨が降っている", "", "ok?"]
    assert shipped.compute(texts).tobytes() == whole.compute(texts).tobytes()
    assert shipped.fingerprint == whole.fingerprint

