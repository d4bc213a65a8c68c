"""Disentanglement scores, following Kummerfeld et al. (2019) and their evaluation tools.

* link P/R/F over (parent, child) pairs, self-links included; a message may have several
  gold parents, a system output normally gives one.
* conversations are the connected components of the reply graph (context messages
  included while joining), restricted afterwards to annotated messages (>= the first
  annotated line, 1000 in Ubuntu files).
* 1 - VI / log2(n), with VI computed over the contingency table of all files pooled.
* one-to-one overlap: the best one-to-one matching of system to gold conversations
  (maximum total overlap, found here with the Hungarian algorithm), as a % of messages.
* exact match P/R/F over conversations of 2+ messages.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Links = Mapping[int, Sequence[int]]  # child -> parents


def clusters(links: Links, first: int) -> list[frozenset[int]]:
    """Connected components of the link graph, keeping only messages >= ``first``."""
    parent: dict[int, int] = {}

    def find(a: int) -> int:
        parent.setdefault(a, a)
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for child, ps in links.items():
        find(child)
        for p in ps:
            ra, rb = find(child), find(p)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, set[int]] = {}
    for node in parent:
        if node >= first:
            groups.setdefault(find(node), set()).add(node)
    return [frozenset(g) for g in groups.values()]


def hungarian_max(weights: npt.NDArray[np.float64]) -> float:
    """Maximum total weight of a one-to-one assignment (rectangular matrices allowed)."""
    w = np.asarray(weights, dtype=np.float64)
    if w.size == 0:
        return 0.0
    if w.shape[0] > w.shape[1]:
        w = w.T
    n, m = w.shape  # n <= m
    cost = w.max() - w
    # Jonker-Volgenant style shortest augmenting path (O(n^2 m)), potentials u, v.
    u = np.zeros(n + 1)
    v = np.zeros(m + 1)
    match = np.zeros(m + 1, dtype=np.int64)  # column -> row (1-based, 0 = free)
    for row in range(1, n + 1):
        match[0] = row
        j0 = 0
        minv = np.full(m + 1, np.inf)
        used = np.zeros(m + 1, dtype=bool)
        way = np.zeros(m + 1, dtype=np.int64)
        while True:
            used[j0] = True
            i0 = match[j0]
            cur = cost[i0 - 1] - u[i0] - v[1:]
            free = ~used[1:]
            better = free & (cur < minv[1:])
            minv[1:][better] = cur[better]
            way[1:][better] = j0
            cand = np.where(free, minv[1:], np.inf)
            j1 = int(np.argmin(cand)) + 1
            delta = cand[j1 - 1]
            u[match[used]] += delta
            v[used] -= delta
            minv[1:][free] -= delta
            j0 = j1
            if match[j0] == 0:
                break
        while j0:
            j1 = int(way[j0])
            match[j0] = match[j1]
            j0 = j1
    total = 0.0
    for j in range(1, m + 1):
        if match[j]:
            total += w[match[j] - 1, j - 1]
    return total


@dataclass
class Scorer:
    """Accumulates files, then reports the pooled scores (all as percentages)."""

    gold_links: int = 0
    auto_links: int = 0
    matched_links: int = 0
    gold_multi: int = 0
    auto_multi: int = 0
    matched_multi: int = 0
    one_to_one: float = 0.0
    # contingency cells, row sums and column sums pooled over files
    cells: list[int] = field(default_factory=list)
    auto_sizes: list[int] = field(default_factory=list)
    gold_sizes: list[int] = field(default_factory=list)

    def add(self, gold: Links, auto: Links, first: int) -> None:
        gpairs = {(c, p) for c, ps in gold.items() for p in ps}
        apairs = {(c, p) for c, ps in auto.items() for p in ps}
        self.gold_links += len(gpairs)
        self.auto_links += len(apairs)
        self.matched_links += len(gpairs & apairs)

        gcl = [c for c in clusters(gold, first) if c]
        acl = [c for c in clusters(auto, first) if c]
        gset, aset = set(gcl), set(acl)
        self.gold_multi += sum(1 for c in gcl if len(c) > 1)
        self.auto_multi += sum(1 for c in acl if len(c) > 1)
        self.matched_multi += sum(1 for c in gcl if len(c) > 1 and c in aset)
        del gset

        where = {m: k for k, c in enumerate(gcl) for m in c}
        table = np.zeros((len(acl), len(gcl)))
        for r, c in enumerate(acl):
            for m in c:
                g = where.get(m)
                if g is not None:
                    table[r, g] += 1
        self.cells.extend(int(v) for v in table[table > 0])
        self.auto_sizes.extend(len(c) for c in acl)
        self.gold_sizes.extend(len(c) for c in gcl)
        self.one_to_one += hungarian_max(table)

    def results(self) -> dict[str, float]:
        lp, lr, lf = _prf(self.matched_links, self.auto_links, self.gold_links)
        ep, er, ef = _prf(self.matched_multi, self.auto_multi, self.gold_multi)
        n = float(sum(self.gold_sizes))
        return {
            "link_p": lp,
            "link_r": lr,
            "link_f": lf,
            "vi": 100.0
            * (
                1.0
                - variation_of_information(self.cells, self.auto_sizes, self.gold_sizes)
                / math.log2(n)
            )
            if n > 1
            else 100.0,
            "one_to_one": float(100.0 * self.one_to_one / n) if n else 0.0,
            "exact_p": ep,
            "exact_r": er,
            "exact_f": ef,
        }


def variation_of_information(
    cells: Iterable[int], rows: Iterable[int], cols: Iterable[int]
) -> float:
    """VI = H(U|V) + H(V|U) in bits, from the nonzero contingency cells and marginals."""
    rows_l, cols_l, cells_l = list(rows), list(cols), list(cells)
    total = float(sum(rows_l))
    h_joint = -sum(c / total * math.log2(c / total) for c in cells_l)
    h_u = -sum(r / total * math.log2(r / total) for r in rows_l if r)
    h_v = -sum(c / total * math.log2(c / total) for c in cols_l if c)
    # VI = 2 H(U,V) - H(U) - H(V)
    return 2 * h_joint - h_u - h_v


def _prf(matched: int, auto: int, gold: int) -> tuple[float, float, float]:
    p = 100.0 * matched / auto if auto else 0.0
    r = 100.0 * matched / gold if gold else 0.0
    f = 2 * p * r / (p + r) if matched else 0.0
    return p, r, f
