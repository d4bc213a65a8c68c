"""Experiment: do the addressee model's trees hold to a last-bit change in what they read?

Another machine's Newton sums round differently, so its linear weights and first-round
predictions differ in their last bits. This trains the ranker (`forest.rank`, as `kuuki
train addressee` does) twice on the same train rows: as they are, and with the second
round's weights moved 2e-6 relative and the first round's predictions 1e-8 (about what the
shipped-weights test's perturbation moves them by), and compares the two forests and their
dev predictions. With ``--grid X/L`` every input is first rounded to 1/X (the linear score
to 1/L). docs/decisions.md, "What reproduces", has the figures.

    python docs/tools/ranker_stability.py [--grid 256/8]    # from the repository, ~4 min

The rows are addressee_ranker_experiment.py's (kept in /tmp/gbdt_rows.pkl between runs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from kuuki.decide.models.addressee import AddresseeModel
from kuuki.decide.models.features import ADDRESSEE_FEATURES, PREDICTED
from kuuki.decide.training import forest

sys.path.insert(0, str(Path(__file__).parent))
from addressee_ranker_experiment import accuracy, rows, sizes

Rounding = Callable[[np.ndarray], np.ndarray]


def grid(spec: str | None) -> Rounding:
    if spec is None:
        return lambda r: r
    x, linear = (float(v) for v in spec.split("/"))

    def rounded(r: np.ndarray) -> np.ndarray:
        out = np.round(r * x) / x
        out[:, -1] = np.round(r[:, -1] * linear) / linear
        return out

    return rounded


def probabilities(starts: np.ndarray, n: int, scores: np.ndarray) -> np.ndarray:
    group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    e = np.exp(scores - np.maximum.reduceat(scores, starts)[group])
    out: np.ndarray = e / np.add.reduceat(e, starts)[group]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grid", help="round the trees' inputs to 1/X, the linear score 1/L")
    args = parser.parse_args()
    model = AddresseeModel.shipped()
    train, dev = rows(model)
    rng = np.random.default_rng(5)
    second = model.second * (1 + 2e-6 * rng.uniform(-1, 1, model.second.shape))
    predicted = np.array([n.removeprefix("crowded_") in PREDICTED for n in ADDRESSEE_FEATURES])
    moved = train.x.copy()
    noise = 1e-8 * rng.uniform(-1, 1, (len(moved), int(predicted.sum())))
    moved[:, predicted] += noise * (moved[:, predicted] != 0)
    rounded = grid(args.grid)
    stacked = forest.stacked
    forest.stacked = lambda x, linear: rounded(stacked(x, linear))  # type: ignore[assignment]
    a = forest.rank(train.x, train.x @ model.second, train.starts, train.gold)
    b = forest.rank(moved, moved @ second, train.starts, train.gold)
    same = [np.array_equal(a.feature[t], b.feature[t])
            and np.array_equal(a.threshold[t], b.threshold[t]) for t in range(a.trees)]
    first = same.index(False) if False in same else a.trees
    print(f"grid {args.grid}: {sum(same)} of {a.trees} trees the same, the first "
          f"{first} in a row; leaves apart by up to {np.abs(a.value - b.value).max():.3f}")
    for name, g in dev.items():
        sa = a.score(rounded(np.column_stack([g.x, g.x @ model.second])))
        sb = b.score(rounded(np.column_stack([g.x, g.x @ second])))
        apart = np.abs(probabilities(g.starts, len(g.x), sa)
                       - probabilities(g.starts, len(g.x), sb))
        print(f"  {name} dev: right {accuracy(g, sa):.4f} and {accuracy(g, sb):.4f}; "
              f"probabilities apart by up to {apart.max():.3f} "
              f"({int((apart > 5e-4).sum())} of {len(apart)} rows by more than 5e-4; "
              f"{len(sizes(g))} messages)")


if __name__ == "__main__":
    main()
