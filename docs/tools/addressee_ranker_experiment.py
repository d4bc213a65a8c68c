"""Experiment: a gradient-boosted ranker (LightGBM lambdarank) on the addressee model's own
feature rows, against the shipped conditional logit, on MRMP and Ubuntu IRC dev. Not product
code: LightGBM is not a dependency of kuuki (`pip install lightgbm` to run this).

    python docs/tools/addressee_ranker_experiment.py     # from the repository, ~5 min

The rows are the shipped model's (second round, its first-round predictions as features,
the train splits with their augmented copies), kept in /tmp/gbdt_rows.pkl between runs.
docs/decisions.md, "Issue 35: a tree ranker over the addressee model's rows".
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import lightgbm as lgb  # type: ignore[import-not-found]
import numpy as np

from kuuki.decide.models.addressee import AddresseeModel
from kuuki.decide.training.evaluate import read_chats
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


def main() -> None:
    started = time.perf_counter()
    model = AddresseeModel.shipped()
    train, dev = rows(model)
    print(f"rows: {len(train.x)} of {len(train.starts)} messages, "
          f"{time.perf_counter() - started:.0f} s")
    for name, g in dev.items():
        print(f"{name}: the shipped logit {accuracy(g, g.x @ model.second):.4f}")
    relevant = np.zeros(len(train.x))
    relevant[train.gold] = 1
    for stacked in (False, True):
        x = np.column_stack([train.x, train.x @ model.second]) if stacked else train.x
        for leaves, trees in ((15, 300), (31, 600)):
            params = {"objective": "lambdarank", "num_leaves": leaves, "learning_rate": 0.05,
                      "min_data_in_leaf": 50, "feature_fraction": 0.8, "bagging_fraction": 0.8,
                      "bagging_freq": 1, "verbose": -1, "lambdarank_truncation_level": 3,
                      "num_threads": 1, "seed": 1}
            ranker = lgb.train(params, lgb.Dataset(x, relevant, group=sizes(train)),
                               num_boost_round=trees)
            for name, g in dev.items():
                xd = np.column_stack([g.x, g.x @ model.second]) if stacked else g.x
                print(f"stacked={stacked} leaves={leaves} trees={trees} {name}: "
                      f"{accuracy(g, ranker.predict(xd)):.4f}")


if __name__ == "__main__":
    main()
