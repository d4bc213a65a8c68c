"""The boosted trees as arrays: the numpy walk gives LightGBM's own scores, and a file whose
trees do not hold together is refused with the setting named."""

from __future__ import annotations

from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest

from kuuki.decide.models.addressee import AddresseeModel
from kuuki.decide.models.features import ADDRESSEE_FEATURES
from kuuki.decide.models.trees import Forest
from kuuki.decide.training.forest import from_lightgbm, rank
from kuuki.errors import ConfigError


def test_the_arrays_score_every_row_as_lightgbm_does() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3000, 5))
    x[:, 3] = rng.integers(0, 3, 3000)  # a feature with ties, as counts and flags are
    y = x[:, 0] * x[:, 1] + (x[:, 3] == 2) + rng.normal(scale=0.1, size=3000)
    booster = lgb.train({"num_leaves": 15, "max_depth": 6, "verbose": -1, "num_threads": 1,
                         "seed": 1},
                        lgb.Dataset(x, y), num_boost_round=40)
    forest = from_lightgbm(booster.dump_model(), 5)
    test = rng.normal(size=(500, 5))
    test[:, 3] = rng.integers(0, 3, 500)
    test[:10] = x[:10]  # rows exactly at training values, where `<=` against `<` shows
    assert forest.depth == 6 and forest.trees == 40
    np.testing.assert_allclose(forest.score(test), booster.predict(test), rtol=0, atol=1e-12)


def test_the_ranker_learns_what_a_sum_cannot_and_its_probabilities_follow() -> None:
    # an interaction a linear score cannot hold: the gold candidate is the one whose two
    # flags agree; the linear scores alone are uninformative (all 0)
    rng = np.random.default_rng(3)
    messages, per = 400, 3
    first = rng.integers(0, 2, size=messages * per).astype(float)
    gold = np.arange(0, messages * per, per, dtype=np.int64) + rng.integers(0, per, messages)
    second = 1.0 - first
    second[gold] = first[gold]  # only the gold candidate's two flags agree
    x = np.column_stack([first, second])
    starts = np.arange(0, messages * per, per, dtype=np.int64)
    forest = rank(x, np.zeros(len(x)), starts, gold, trees=30)
    scores = forest.score(np.column_stack([x, np.zeros(len(x))]))
    p = np.exp(scores).reshape(messages, per)
    p /= p.sum(axis=1, keepdims=True)
    assert p.ravel()[gold].min() > 0.9  # from 1/3 with the linear scores alone


def test_the_shipped_model_carries_its_trees_and_they_move_scores() -> None:
    model = AddresseeModel.shipped()
    assert model.forest is not None and model.forest.trees > 0
    x = np.zeros((3, len(ADDRESSEE_FEATURES)))
    x[0, ADDRESSEE_FEATURES.index("prev_is")] = 1
    x[1, ADDRESSEE_FEATURES.index("name_call")] = 1
    added = model.boosted(x, x @ model.second)
    assert added.shape == (3,) and np.any(added != 0)


@pytest.mark.parametrize(("change", "says"), [
    (lambda a: a.pop("tree_value"), "the trees lack tree_value"),
    (lambda a: a.__setitem__("tree_feature", a["tree_feature"] + 500), "reads a feature"),
    (lambda a: a.__setitem__("tree_value", a["tree_value"][:, 1:]), "not complete levels"),
    (lambda a: a.__setitem__("tree_threshold", a["tree_threshold"][1:]), "differ in shape"),
])
def test_a_broken_forest_is_refused_naming_the_setting(tmp_path: Path, change, says) -> None:  # type: ignore[no-untyped-def]
    model = AddresseeModel.shipped()
    assert model.forest is not None
    arrays = dict(model.forest.arrays())
    change(arrays)
    with pytest.raises(ConfigError) as err:
        Forest.of(arrays, len(ADDRESSEE_FEATURES) + 1)  # type: ignore[arg-type]
    assert err.value.key == "addressee.weights" and says in str(err.value)
