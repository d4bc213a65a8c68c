"""The cyclic garbage collector's settings for a long-running bot process.

A collector pass walks every tracked container object of the generations it collects. After
start-up most of the process's objects (modules, compiled patterns, settings, the static
embedding table's index, the disentangler's model) live as long as the process, yet every
full pass walked them again; and with Python's default young-generation threshold (700
allocations) the message path triggered a young pass every few messages. Measured with
`kuuki bench ingest --messages 10000 --channels 100`: ~790 passes, 0.49-0.52 s of CPU
time of a ~6 s run (6-8 %). `settle()` after start-up freezes what exists then
(`gc.freeze`: later passes skip it) and lets the young generation reach `YOUNG` objects
before a pass: 41 passes, ~0.08 s. Garbage without cycles is freed at once by reference
counting either way; what waits longer for a pass is only cyclic garbage, a few thousand
small objects.

Called by `kuuki run` once the App is built (and by the ingest benchmark, which measures
that path); never by library code or tests, which share their process with other work.
"""

from __future__ import annotations

import gc

YOUNG = 10_000


def settle() -> None:
    """Start-up is over: move what exists now out of the collector's way."""
    gc.collect()
    gc.freeze()
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG), older, oldest)
