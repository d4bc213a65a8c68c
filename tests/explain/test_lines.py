"""How a trace's numbers read in `kuuki why` and on the card."""

from __future__ import annotations

import pytest

from kuuki.explain.lines import value_text


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.001, "1"), (1.0, "1"), (0.996, "1"), (1.25, "1.25"), (2.5, "2.5"), (0.004, "0"),
     (3, "3")],
)
def test_a_number_reads_without_a_dangling_point(value: float, text: str) -> None:
    assert value_text(value) == text
