from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from kuuki.conversation import cli
from kuuki.conversation.cli import baseline_predictor, evaluate, model_predictor
from kuuki.conversation.features import N_FEATURES
from kuuki.conversation.model import DisentanglerModel, shipped_model
from kuuki.conversation.train import (
    collect,
    fit,
    load_split,
    spread_minutes,
    train,
    training_minutes,
)

from .conftest import BigramEmbedder


def _small_split(irc_data: Path, tmp_path: Path, split: str, n: int = 1) -> Path:
    out = tmp_path / split
    out.mkdir(parents=True)
    for a in sorted((irc_data / split).glob("*.ascii.txt"))[:n]:
        ann = a.with_name(a.name.replace(".ascii.txt", ".annotation.txt"))
        (out / a.name).write_text(a.read_text())
        (out / ann.name).write_text(ann.read_text())
    return out


def test_training_is_deterministic_and_learns(irc_data: Path, tmp_path: Path) -> None:
    split = _small_split(irc_data, tmp_path, "train")
    files = load_split(split, BigramEmbedder(), cache_dir=None)
    ex = collect(files, None)
    assert ex.gold[ex.valid].sum() >= len(ex.x)  # every example has a gold candidate
    m1 = fit(ex, hidden=8, epochs=12, batch=16, seed=3)
    m2 = fit(ex, hidden=8, epochs=12, batch=16, seed=3)
    assert np.array_equal(m1.w1, m2.w1) and np.array_equal(m1.w, m2.w)
    path = tmp_path / "w.npz"
    m1.save(path)
    again = DisentanglerModel.load(path)
    assert np.array_equal(again.v, m1.v)
    # a dozen epochs on one file already beat linking to the previous message
    ours = evaluate(files, model_predictor(m1))
    base = evaluate(files, baseline_predictor)
    assert ours["link_f"] > base["link_f"] + 10


def test_run_eval_prints_both_tables(irc_data: Path, tmp_path: Path) -> None:
    split = _small_split(irc_data, tmp_path, "dev")
    out = io.StringIO()
    res = cli.run_eval(split, out, embedder=BigramEmbedder())
    text = out.getvalue()
    assert "previous message baseline" in text and "73.5" in text and "35.0" in text
    assert 0 < res["baseline_link_f"] < res["link_f"] <= 100
    assert res["one_to_one"] > res["baseline_one_to_one"]


def test_run_disentangle_writes_dataset_format(
    irc_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "default_embedder", BigramEmbedder)
    src = sorted((irc_data / "dev").glob("*.ascii.txt"))[0]
    path = tmp_path / "x.ascii.txt"
    path.write_text("\n".join(src.read_text().splitlines()[:1100]) + "\n")
    out = io.StringIO()
    cli.run_disentangle(path, 1000, out)
    rows = [line.split() for line in out.getvalue().splitlines()]
    children = [int(r[1]) for r in rows]
    assert sorted(set(children)) == list(range(1000, 1100)) == sorted(set(children))
    assert children == sorted(children)  # in file order
    assert all(children.count(c) <= 2 for c in set(children))  # at most a second parent
    assert all(r[2] == "-" and int(r[0]) <= int(r[1]) for r in rows)


def test_run_bench_prints_one_json_line(
    irc_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "default_embedder", BigramEmbedder)
    _small_split(irc_data, tmp_path, "dev")
    out = io.StringIO()
    res = cli.run_bench(tmp_path, out)
    line = json.loads(out.getvalue())
    assert set(line) == {
        "messages",
        "messages_per_s",
        "link_f",
        "one_to_one",
        "seconds",
        "embedding_seconds",
        "messages_per_s_batched32",
        "link_f_batched32",
    }
    assert line["messages"] == res["messages"] > 1000
    assert res["link_f"] > 0


def test_shipped_model_is_used_by_default() -> None:
    assert shipped_model() is shipped_model()


def test_train_runs_both_rounds_and_writes_weights(irc_data: Path, tmp_path: Path) -> None:
    _small_split(irc_data, tmp_path / "data", "train")
    log = io.StringIO()
    model = train(
        tmp_path / "data",
        tmp_path / "w.npz",
        embedder=BigramEmbedder(),
        hidden=4,
        epochs=1,
        members=2,
        out=log,
    )
    loaded = DisentanglerModel.load(tmp_path / "w.npz")
    assert loaded.w1.shape == (N_FEATURES, 8)  # two members side by side
    assert np.array_equal(loaded.w1, model.w1)
    assert "round 2" in log.getvalue()


def test_spread_minutes_gives_each_minute_sorted_seconds() -> None:
    rng = np.random.default_rng(0)
    out = spread_minutes([5.0, 5.0, 5.0, 7.0, 9.0, 9.0], rng)
    assert out == sorted(out)
    assert [int(m) for m in out] == [5, 5, 5, 7, 9, 9]  # never leaves its minute
    assert len({m - int(m) for m in out}) == 6 and out[0] != 5.0


def test_training_minutes_spreads_only_some_minute_only_files(irc_data: Path) -> None:
    files = load_split(irc_data / "train", None, cache_dir=None, limit=6)
    whole = training_minutes(files, seed=0, spread=0.0)
    assert all(m == int(m) for f in files for m in whole[f.name])
    spread = training_minutes(files, seed=0, spread=1.0)
    assert all(any(m != int(m) for m in spread[f.name]) for f in files)
    assert training_minutes(files, seed=0) == training_minutes(files, seed=0)


def test_conversation_targets_cover_the_gold_conversation(irc_data: Path, tmp_path: Path) -> None:
    split = _small_split(irc_data, tmp_path, "train")
    ex = collect(load_split(split, BigramEmbedder(), cache_dir=None), None)
    # the gold parents are always conversation targets, and some messages have more
    assert not (ex.gold & ~ex.conv).any()
    assert (ex.conv.sum(axis=1) > ex.gold.sum(axis=1)).any()
    assert not (ex.conv & ~ex.valid).any()
