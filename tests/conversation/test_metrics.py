import itertools
import math

import numpy as np
import pytest

from kuuki.conversation.metrics import Scorer, clusters, hungarian_max, variation_of_information


def test_clusters_join_through_context_then_drop_it() -> None:
    # 11 and 12 both answer context line 5: one conversation, 5 itself not reported
    links = {10: [10], 11: [5], 12: [5], 13: [10]}
    got = sorted(sorted(c) for c in clusters(links, first=10))
    assert got == [[10, 13], [11, 12]]


def test_perfect_output_scores_100() -> None:
    gold = {10: [10], 11: [10], 12: [12], 13: [12], 14: [11]}
    s = Scorer()
    s.add(gold, gold, 10)
    r = s.results()
    for key in ("link_p", "link_r", "link_f", "vi", "one_to_one", "exact_p", "exact_r"):
        assert r[key] == pytest.approx(100.0)


def test_link_prf_with_multiple_gold_parents() -> None:
    gold = {10: [10], 11: [10], 12: [10, 11]}  # 12 has two gold parents
    auto = {10: [10], 11: [10], 12: [11]}
    s = Scorer()
    s.add(gold, auto, 10)
    r = s.results()
    assert r["link_p"] == pytest.approx(100.0)  # 3 of 3 predicted links are gold
    assert r["link_r"] == pytest.approx(75.0)  # 3 of 4 gold links found
    assert r["link_f"] == pytest.approx(2 * 100 * 75 / 175)


def test_one_cluster_vs_singletons() -> None:
    # gold: one conversation of 4; auto: four singletons
    gold = {10: [10], 11: [10], 12: [11], 13: [12]}
    auto = {m: [m] for m in range(10, 14)}
    s = Scorer()
    s.add(gold, auto, 10)
    r = s.results()
    # VI = H(gold|auto) + H(auto|gold) = 0 + log2 4 = 2 bits; n = 4 -> 1 - 2/2 = 0
    assert r["vi"] == pytest.approx(0.0)
    assert r["one_to_one"] == pytest.approx(25.0)
    assert r["exact_p"] == 0.0 and r["exact_r"] == 0.0
    assert r["link_p"] == pytest.approx(25.0)


def test_split_pair_one_to_one_and_exact_match() -> None:
    # gold {10,11,12} {13,14}; auto {10,11} {12,13,14}
    gold = {10: [10], 11: [10], 12: [11], 13: [13], 14: [13]}
    auto = {10: [10], 11: [10], 12: [12], 13: [12], 14: [13]}
    s = Scorer()
    s.add(gold, auto, 10)
    r = s.results()
    assert r["one_to_one"] == pytest.approx(80.0)  # {10,11}<->gold A (2) + {12,13,14}<->B (2)
    assert r["exact_p"] == 0.0
    cells, rows, cols = [2, 1, 2], [2, 3], [3, 2]
    vi = variation_of_information(cells, rows, cols)
    assert r["vi"] == pytest.approx(100 * (1 - vi / math.log2(5)))
    # by hand: H(U,V) = -(2 * .4 log .4 + .2 log .2); H(U) = H(V) = H(.4, .6)
    h_joint = -(2 * 0.4 * math.log2(0.4) + 0.2 * math.log2(0.2))
    h_m = -(0.4 * math.log2(0.4) + 0.6 * math.log2(0.6))
    assert vi == pytest.approx(2 * h_joint - 2 * h_m)


def test_scores_pool_files() -> None:
    s = Scorer()
    s.add({10: [10], 11: [10]}, {10: [10], 11: [10]}, 10)
    s.add({10: [10], 11: [10]}, {10: [10], 11: [11]}, 10)
    r = s.results()
    assert r["link_p"] == pytest.approx(75.0)
    assert r["one_to_one"] == pytest.approx(75.0)
    assert r["exact_r"] == pytest.approx(50.0)
    assert r["exact_p"] == pytest.approx(100.0)  # the only 2+ system cluster is right


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (4, 6), (6, 4), (5, 5)])
def test_hungarian_matches_brute_force(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(shape))
    for _ in range(20):
        w = rng.integers(0, 6, size=shape).astype(float)
        n, m = shape
        if n <= m:
            best = max(
                sum(w[i, p[i]] for i in range(n)) for p in itertools.permutations(range(m), n)
            )
        else:
            best = max(
                sum(w[p[j], j] for j in range(m)) for p in itertools.permutations(range(n), m)
            )
        assert hungarian_max(w) == pytest.approx(best)
