"""Fakes that behave, for tests only: a scripted LLM, a virtual clock, a recording outbox.

Nothing in the product path imports this package.
"""

from __future__ import annotations

import random

from kuuki.clock import VirtualClock
from kuuki.replay.runner import RecordingOutbox

__all__ = ["RecordingOutbox", "VirtualClock", "prose_lines"]

_SYLLABLES = ("ka", "ri", "to", "men", "sa", "lo", "vi", "de", "nu", "po", "ra", "gel", "mi")


def prose_lines(n: int, words: int = 10, *, seed: int = 7) -> list[str]:
    """``n`` lines of varied made-up words: long model output that is not a loop.

    The output guard rejects text that repeats itself, so tests of long replies (the
    platforms' message splitting) need text that does not.
    """
    rng = random.Random(seed)
    out = []
    for i in range(n):
        made = (
            "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3)))
            for _ in range(words)
        )
        out.append(f"{i + 1}) " + " ".join(made))
    return out
