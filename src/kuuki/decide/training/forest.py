"""The addressee model's trees: a ranker over the second round's rows (LightGBM, training
only).

A conditional logit is a sum: it cannot hold an interaction (a name *and* a question; "spoke
just before" *in a crowded talk*). LightGBM's lambdarank learns one ranking of each
message's candidates, its gold one first, from the rows and the linear score itself (so the
trees start from what the logit knows and spend their splits on what it cannot). Its scores
are not probabilities: one temperature, fitted on the training rows (the conditional
logit's loss, Newton on the inverse temperature), makes them so, and is folded into the
leaves. Boosting the logit's own loss from its scores was also tried and ranked a little
worse (docs/decisions.md). The running bot reads only the arrays
(:class:`kuuki.decide.models.trees.Forest`); LightGBM is a training dependency.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from kuuki.decide.models.trees import MAX_DEPTH, Forest
from kuuki.errors import ConfigError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

TREES = 300
LEAVES = 15
DEPTH = 4  # the walk costs a numpy step a level (5 and 12 ranked no better on dev)
PARAMS: dict[str, Any] = {
    "objective": "lambdarank", "lambdarank_truncation_level": 3,
    "num_leaves": LEAVES, "max_depth": DEPTH, "learning_rate": 0.05, "min_data_in_leaf": 50,
    "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "seed": 1,
    "num_threads": 1, "deterministic": True, "force_col_wise": True, "verbose": -1,
}
MAX_SHARPEN = 100.0  # the inverse temperature's bound (a ranking that separates every message)


def rank(x: FloatArray, linear: FloatArray, starts: IntArray, gold: IntArray,
         trees: int = TREES) -> Forest:
    """Trees over ``[x, linear]`` ranking each message's candidates (``starts``: the first
    row of each; ``gold``: its gold row), their scores scaled to a conditional logit's."""
    try:
        import lightgbm as lgb  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise ConfigError("train", "kuuki train addressee needs LightGBM: "
                                   "pip install 'kuuki[train]'") from exc
    relevant = np.zeros(len(x))
    relevant[gold] = 1.0
    sizes = np.diff(np.append(starts, len(x)))
    rows = stacked(x, linear)
    booster = lgb.train(PARAMS, lgb.Dataset(rows, relevant, group=sizes), num_boost_round=trees)
    forest = from_lightgbm(booster.dump_model(), x.shape[1] + 1)
    sharpen = inverse_temperature(forest.score(rows), starts, gold)
    return forest.scaled(sharpen)


def inverse_temperature(scores: FloatArray, starts: IntArray, gold: IntArray) -> float:
    """The ``b`` that makes ``softmax(b * scores)`` over each message's rows fit its gold
    row best (the negative log-likelihood is convex in ``b``: Newton's method)."""
    group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(scores))))
    b = 1.0
    for _ in range(50):
        s = b * scores
        e = np.exp(s - np.maximum.reduceat(s, starts)[group])
        p = e / np.add.reduceat(e, starts)[group]
        mean = np.add.reduceat(p * scores, starts)
        grad = float(np.sum(mean - scores[gold]))
        hess = float(np.sum(np.add.reduceat(p * scores**2, starts) - mean**2))
        if hess <= 0:
            break
        step = grad / hess
        b = min(max(b - step, 1e-3), MAX_SHARPEN)
        if abs(step) < 1e-9 * max(b, 1.0) or b == MAX_SHARPEN:
            break
    return b


def stacked(x: FloatArray, linear: FloatArray) -> FloatArray:
    out: FloatArray = np.column_stack([x, linear])
    return out


def from_lightgbm(dump: dict[str, Any], features: int) -> Forest:
    """LightGBM's ``dump_model()`` as a :class:`Forest` of complete trees (numerical splits
    only: what LightGBM makes of numerical features)."""
    infos = [tree["tree_structure"] for tree in dump["tree_info"]]
    depth = max(1, *(_depth(node) for node in infos))
    if depth > MAX_DEPTH:
        raise ValueError(f"trees of depth {depth}: the arrays hold at most {MAX_DEPTH}")
    nodes = 2**depth - 1
    feature = np.zeros((len(infos), nodes), np.intp)
    threshold = np.full((len(infos), nodes), np.inf)
    value = np.zeros((len(infos), nodes + 1))

    def fill(t: int, node: dict[str, Any], k: int) -> None:
        if k >= nodes:
            value[t, k - nodes] = float(node["leaf_value"])
        elif "leaf_value" in node:  # a leaf above the last level: both sides end in it
            fill(t, node, 2 * k + 1)
            fill(t, node, 2 * k + 2)
        else:
            if node["decision_type"] != "<=" or node["missing_type"] not in ("None", "NaN"):
                raise ValueError(f"a split LightGBM made that the arrays cannot hold: {node}")
            feature[t, k], threshold[t, k] = int(node["split_feature"]), float(node["threshold"])
            fill(t, node["left_child"], 2 * k + 1)
            fill(t, node["right_child"], 2 * k + 2)

    for t, node in enumerate(infos):
        fill(t, node, 0)
    forest = Forest(feature, threshold, value)
    forest.check(features)
    return forest


def _depth(node: dict[str, Any]) -> int:
    if "leaf_value" in node:
        return 0
    return 1 + max(_depth(node["left_child"]), _depth(node["right_child"]))
