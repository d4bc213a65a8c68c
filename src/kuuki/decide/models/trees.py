"""Regression trees as arrays, walked in numpy: the addressee model's ranker.

Every tree is stored complete, to one depth ``D``, in level order (node ``k``'s children are
``2k + 1`` and ``2k + 2``): a leaf that LightGBM (which trained them:
:mod:`kuuki.decide.training.forest`) left higher up is a split on +inf whose two sides end
in copies of its value. A row goes right when its feature is above the node's threshold
(LightGBM's numerical split sends ``x <= threshold`` left). All trees step down at once,
one level a step: a message's few candidate rows cost ``D`` steps of a few gathers each
(measured: docs/benchmarks.md), not a Python loop per tree or node. (Testing every node of
every tree in one gather, then only finding the path, was slower: the gather grows with
``2**D`` where the walk grows with ``D``.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kuuki.errors import ConfigError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
MAX_DEPTH = 8  # 255 nodes a tree: deeper trees would make the test of every node costly


@dataclass(frozen=True, slots=True)
class Forest:
    feature: IntArray  # (trees, 2**depth - 1): the column each node reads
    threshold: FloatArray  # (trees, 2**depth - 1): go right when x > threshold
    value: FloatArray  # (trees, 2**depth): the leaves' values, left to right
    # the walk's tables over every node of every tree, flat (made from the three above)
    _feature: IntArray = field(init=False, repr=False, compare=False)
    _threshold: FloatArray = field(init=False, repr=False, compare=False)
    _value: FloatArray = field(init=False, repr=False, compare=False)
    _roots: IntArray = field(init=False, repr=False, compare=False)
    _down: IntArray = field(init=False, repr=False, compare=False)  # a node's left child
    _leaf: IntArray = field(init=False, repr=False, compare=False)  # or, last level, leaf

    def __post_init__(self) -> None:
        trees, nodes = self.feature.shape if self.feature.ndim == 2 else (0, 0)
        node = np.arange(trees * nodes, dtype=np.intp)
        tree, k = np.divmod(node, max(nodes, 1))
        tables = {"_feature": self.feature.ravel(), "_threshold": self.threshold.ravel(),
                  "_value": self.value.ravel(),
                  "_roots": np.arange(trees, dtype=np.intp) * nodes,
                  "_down": tree * nodes + 2 * k + 1,
                  "_leaf": tree * (nodes + 1) + 2 * k + 1 - nodes}
        for name, table in tables.items():
            object.__setattr__(self, name, table)

    @property
    def depth(self) -> int:
        return int(self.value.shape[1]).bit_length() - 1

    @property
    def trees(self) -> int:
        return int(self.value.shape[0])

    @classmethod
    def of(cls, arrays: Mapping[str, npt.NDArray[np.generic]], features: int) -> Forest:
        """The forest stored as ``tree_*`` arrays, checked to be one (``addressee.weights``
        names what is wrong)."""
        try:
            forest = cls(arrays["tree_feature"].astype(np.intp),
                         arrays["tree_threshold"].astype(np.float64),
                         arrays["tree_value"].astype(np.float64))
        except KeyError as exc:
            raise ConfigError("addressee.weights", f"the trees lack {exc.args[0]}") from exc
        forest.check(features)
        return forest

    def arrays(self) -> dict[str, npt.NDArray[np.generic]]:
        return {"tree_feature": self.feature.astype(np.int32),
                "tree_threshold": self.threshold, "tree_value": self.value}

    def check(self, features: int) -> None:
        trees, leaves = self.value.shape if self.value.ndim == 2 else (0, 0)
        depth = int(leaves).bit_length() - 1
        if trees == 0 or leaves != 2**depth or not 1 <= depth <= MAX_DEPTH:
            raise ConfigError("addressee.weights", "the trees' leaves are not complete levels "
                                                   f"of at most depth {MAX_DEPTH}")
        if self.feature.shape != (trees, leaves - 1) or self.threshold.shape != self.feature.shape:
            raise ConfigError("addressee.weights", "the trees' arrays differ in shape")
        if self.feature.min() < 0 or self.feature.max() >= features:
            raise ConfigError("addressee.weights", "a tree reads a feature the rows lack")

    def scaled(self, factor: float) -> Forest:
        """The same trees with every leaf value times ``factor``."""
        return Forest(self.feature, self.threshold, self.value * factor)

    def score(self, x: FloatArray) -> FloatArray:
        """The sum over the trees of each row's leaf value; ``x`` is (rows, features)."""
        rows, width = x.shape
        flat = x.ravel()
        offset = (np.arange(rows, dtype=np.intp) * width)[:, None]
        # np.take, not indexing: the same gather with less overhead on these small arrays
        at = np.broadcast_to(self._roots, (rows, self.trees))
        for level in range(self.depth):
            column = offset + np.take(self._feature, at)
            right = np.take(flat, column) > np.take(self._threshold, at)
            at = np.take(self._leaf if level == self.depth - 1 else self._down, at) + right
        out: FloatArray = np.take(self._value, at).sum(axis=1)
        return out
