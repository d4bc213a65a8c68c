"""Experiment: gradient-boosted trees on the addressee model's own feature rows against its
conditional logit alone, on MRMP and Ubuntu IRC dev: the runs behind the choice of the
shipped ranker (docs/decisions.md, "Issue 35: the addressee model ranks with trees over its
rows"). LightGBM is in the `train` and `test` extras.

    python docs/tools/addressee_ranker_experiment.py     # from the repository, ~15 min

The rows are the shipped model's (second round, its first-round predictions as features,
the train splits with their augmented copies), kept in /tmp/gbdt_rows.pkl between runs.
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import lightgbm as lgb
import numpy as np

from kuuki.decide.models.addressee import AddresseeModel
from kuuki.decide.training.evaluate import read_chats
from kuuki.decide.training.forest import inverse_temperature
from kuuki.decide.training.learn import Groups, addressee_groups, load_chats

DATA = Path("../shared/data")
CACHE = Path("/tmp/gbdt_rows.pkl")


def rows(model: AddresseeModel) -> tuple[Groups, dict[str, Groups]]:
    if CACHE.exists():
        with CACHE.open("rb") as f:
            return pickle.load(f)  # type: ignore[no-any-return]
    chats = load_chats(DATA / "irc-disentanglement/train", DATA / "mrmp/dialogues/train")
    train = addressee_groups(model, chats, second=True)
    dev = {name: addressee_groups(model, read_chats(folder)[1], second=True, augment=False)
           for name, folder in (("irc", DATA / "irc-disentanglement/dev"),
                                ("mrmp", DATA / "mrmp/dialogues/dev"))}
    with CACHE.open("wb") as f:
        pickle.dump((train, dev), f)
    return train, dev


def sizes(g: Groups) -> np.ndarray:
    return np.append(g.starts[1:], len(g.x)) - g.starts


def accuracy(g: Groups, scores: np.ndarray) -> float:
    ends = np.append(g.starts[1:], len(g.x))
    hits = sum(s + int(np.argmax(scores[s:e])) == gold
               for s, e, gold in zip(g.starts, ends, g.gold, strict=True))
    return hits / len(g.starts)


def nll(g: Groups, scores: np.ndarray) -> float:
    """The conditional logit's loss per message: how well the scores work as probabilities."""
    group = np.repeat(np.arange(len(g.starts)), sizes(g))
    top = np.maximum.reduceat(scores, g.starts)
    log_z = np.log(np.add.reduceat(np.exp(scores - top[group]), g.starts)) + top
    return float(np.mean(log_z - scores[g.gold]))


PARAMS = {"learning_rate": 0.05, "min_data_in_leaf": 50, "feature_fraction": 0.8,
          "bagging_fraction": 0.8, "bagging_freq": 1, "verbose": -1, "num_threads": 1,
          "seed": 1, "deterministic": True, "force_col_wise": True}


def ranker(train: Groups, x: np.ndarray, leaves: int, trees: int, depth: int = -1) -> lgb.Booster:
    relevant = np.zeros(len(train.x))
    relevant[train.gold] = 1
    params = {**PARAMS, "objective": "lambdarank", "lambdarank_truncation_level": 3,
              "num_leaves": leaves, "max_depth": depth}
    return lgb.train(params, lgb.Dataset(x, relevant, group=sizes(train)), num_boost_round=trees)


def boosted_logit(train: Groups, x: np.ndarray, linear: np.ndarray, leaves: int,
                  trees: int) -> lgb.Booster:
    """The conditional logit's own loss, boosted from its scores."""
    y = np.zeros(len(train.x))
    y[train.gold] = 1
    group = np.repeat(np.arange(len(train.starts)), sizes(train))

    def objective(preds: np.ndarray, _: object) -> tuple[np.ndarray, np.ndarray]:
        e = np.exp(preds - np.maximum.reduceat(preds, train.starts)[group])
        p = e / np.add.reduceat(e, train.starts)[group]
        return p - y, np.maximum(p * (1 - p), 1e-6)

    params = {**PARAMS, "objective": objective, "num_leaves": leaves}
    return lgb.train(params, lgb.Dataset(x, y, init_score=linear), num_boost_round=trees)


def main() -> None:
    started = time.perf_counter()
    model = AddresseeModel.shipped()
    train, dev = rows(model)
    print(f"rows: {len(train.x)} of {len(train.starts)} messages, "
          f"{time.perf_counter() - started:.0f} s")
    linear = train.x @ model.second
    for name, g in dev.items():
        s = g.x @ model.second
        print(f"{name}: the logit {accuracy(g, s):.4f} (loss {nll(g, s):.3f})")
    for stacked, leaves, trees, depth in ((False, 15, 300, -1), (False, 31, 600, -1),
                                          (True, 15, 300, -1), (True, 31, 600, -1),
                                          (True, 15, 300, 4), (True, 15, 300, 5)):
        x = np.column_stack([train.x, linear]) if stacked else train.x
        booster = ranker(train, x, leaves, trees, depth)
        b = inverse_temperature(np.asarray(booster.predict(x)), train.starts, train.gold)
        for name, g in dev.items():
            xd = np.column_stack([g.x, g.x @ model.second]) if stacked else g.x
            s = b * np.asarray(booster.predict(xd))
            print(f"ranker stacked={stacked} leaves={leaves} trees={trees} depth={depth} "
                  f"{name}: {accuracy(g, s):.4f} (loss {nll(g, s):.3f}, temperature {1 / b:.2f})")
    for leaves, trees in ((15, 600), (7, 600)):
        x = np.column_stack([train.x, linear])
        booster = boosted_logit(train, x, linear, leaves, trees)
        for name, g in dev.items():
            xd = np.column_stack([g.x, g.x @ model.second])
            for k in (300, 600):
                s = g.x @ model.second + booster.predict(xd, num_iteration=k, raw_score=True)
                print(f"boosted logit leaves={leaves} trees={k} {name}: {accuracy(g, s):.4f} "
                      f"(loss {nll(g, s):.3f})")


if __name__ == "__main__":
    main()
