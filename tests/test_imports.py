"""No module of kuuki imports one that imports it back, however indirectly, type-only
imports included (issue 23). import-linter's layer contracts (run by .ci/run) keep the
packages in order; this keeps the modules inside a package free of circles too."""

from __future__ import annotations

import grimp


def strongly_connected(adjacent: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module: each is an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in adjacent[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in adjacent:
        if module not in index:
            visit(module)
    return circles


def test_the_circle_finder_finds_a_circle() -> None:
    assert strongly_connected({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [
        ["a", "b", "c"]
    ]
    assert strongly_connected({"a": ["b"], "b": [], "c": ["a"]}) == []


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = grimp.build_graph("kuuki", exclude_type_checking_imports=False)
    adjacent = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert strongly_connected(adjacent) == []
