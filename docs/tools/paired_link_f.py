"""Paired comparison of two disentanglers' link F on the same annotated logs.

Used for docs/benchmarks.md ("Is the out-of-domain gap noise?"). Two steps, because each
model lives in its own source tree (with its own embedder):

    PYTHONPATH=<tree>/src python docs/tools/paired_link_f.py dump OUT.json SET_DIR...
    python docs/tools/paired_link_f.py compare A.json B.json

``dump`` writes, for every file of every set, the shipped model's predicted parents and
the gold parents of each annotated message. ``compare`` resamples blocks of 10 consecutive
annotated messages (the same blocks for both models; 10,000 resamples, seed 0) and prints
each set's link F for A and B, the difference, its 95 % interval and the share of resamples
in which A is at least B.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

BLOCK = 10
RESAMPLES = 10_000


def dump(out: str, set_dirs: list[str]) -> None:
    from kuuki.conversation.cli import model_predictor
    from kuuki.conversation.model import shipped_model
    from kuuki.conversation.train import load_split
    from kuuki.embed import default_embedder

    predict = model_predictor(shipped_model())
    result = {}
    for d in set_dirs:
        for f in load_split(Path(d), default_embedder()):
            parents = predict(f)
            start = f.annotated_from
            result[f"{Path(d).name}/{f.name}"] = {
                "auto": {c: sorted(int(p) for p in parents[c]) for c in range(start, len(f.lines))},
                "gold": {c: sorted(ps) for c, ps in f.gold.items() if c >= start},
            }
    Path(out).write_text(json.dumps(result))


def _counts(entry: dict[str, dict[str, list[int]]]) -> np.ndarray:
    """(matched, predicted, gold) links of each annotated message, in order."""
    gold, auto = entry["gold"], entry["auto"]
    rows = []
    for c in sorted(gold, key=int):
        g, a = set(gold[c]), set(auto.get(c, []))
        rows.append((len(g & a), len(a), len(g)))
    return np.array(rows)


def _f(m: np.ndarray) -> float:
    return float(200 * m[0] / (m[1] + m[2]))


def compare(a_path: str, b_path: str) -> None:
    a, b = json.loads(Path(a_path).read_text()), json.loads(Path(b_path).read_text())
    rng = np.random.default_rng(0)
    for name in sorted({k.split("/")[0] for k in a}):
        xs, ys = [], []
        for key in sorted(k for k in a if k.startswith(name + "/")):
            x, y = _counts(a[key]), _counts(b[key])
            for i in range(0, len(x), BLOCK):
                xs.append(x[i : i + BLOCK].sum(0))
                ys.append(y[i : i + BLOCK].sum(0))
        x_arr, y_arr = np.array(xs), np.array(ys)
        diffs = np.empty(RESAMPLES)
        for r in range(RESAMPLES):
            idx = rng.integers(0, len(x_arr), len(x_arr))
            diffs[r] = _f(x_arr[idx].sum(0)) - _f(y_arr[idx].sum(0))
        fa, fb = _f(x_arr.sum(0)), _f(y_arr.sum(0))
        lo, hi = np.percentile(diffs, [2.5, 97.5])
        print(f"{name:15s} gold links {int(x_arr[:, 2].sum()):5d}  A {fa:5.1f}  B {fb:5.1f}  "
              f"A-B {fa - fb:+5.1f}  95% [{lo:+.1f}, {hi:+.1f}]  A>=B {np.mean(diffs >= 0):.2f}")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "dump":
        dump(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
