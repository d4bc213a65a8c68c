"""Time the addressee and seat models alone on what `kuuki bench ingest` asks of them.

    python docs/tools/predict_replay.py record OUT.pkl --messages 4000 --channels 40
    python docs/tools/predict_replay.py replay OUT.pkl [--repeat 5] [--results R.pkl]

``record`` runs the ingest bench and keeps every `AddresseeModel.predict` call's turn list
(one pickle, so the turn objects stay shared between calls as they were: the models' caches
are per turn object). ``replay`` makes those predictions, and the seat's, on fresh models
and prints the best wall time of ``--repeat`` runs; ``--results`` pickles what they
returned, to compare two versions of the models (run both with one PYTHONHASHSEED: see
model_rows_digest.py).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from kuuki.decide.models import addressee
from kuuki.decide.models.seat import SeatModel


def record(out: Path, messages: int, channels: int) -> None:
    calls: list[Any] = []
    predict = addressee.AddresseeModel.predict

    def recorded(self: Any, turns: Any, i: int, names: Any, always: Any = ()) -> Any:
        calls.append((turns, i, names, tuple(always)))
        return predict(self, turns, i, names, always)

    addressee.AddresseeModel.predict = recorded  # type: ignore[method-assign]
    from kuuki.cli import main

    sys.argv = ["kuuki", "bench", "ingest", "--messages", str(messages),
                "--channels", str(channels)]
    try:
        main()
    finally:
        out.write_bytes(pickle.dumps(calls))


def replay(path: Path, repeat: int, results: Path | None) -> None:
    calls = pickle.loads(path.read_bytes())  # a file this tool wrote
    best, out = float("inf"), []
    for _ in range(repeat):
        model = addressee.AddresseeModel.shipped()
        seat = SeatModel.shipped(cache=model.cache)
        out = []
        start = time.perf_counter()
        for turns, i, names, always in calls:
            r = model.predict(turns, i, names, always)
            s = seat.predict(turns, i, always[0], names, r)
            out.append((r.to, r.p, tuple(r.candidates.items()), r.top, r.rows,
                        s.p, s.short, s.top, s.content))
        best = min(best, time.perf_counter() - start)
    print(f"predictions {len(calls)} best_s {best:.3f}")
    if results is not None:
        results.write_bytes(pickle.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("record", "replay"))
    ap.add_argument("file", type=Path)
    ap.add_argument("--messages", type=int, default=4000)
    ap.add_argument("--channels", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--results", type=Path)
    a = ap.parse_args()
    if a.mode == "record":
        record(a.file, a.messages, a.channels)
    else:
        replay(a.file, a.repeat, a.results)


if __name__ == "__main__":
    main()
