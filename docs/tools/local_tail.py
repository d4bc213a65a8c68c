"""What the slow local-stage samples of `kuuki bench judge` are, and a digest of what the
learned models read on its replays (for comparing two trees).

    python docs/tools/local_tail.py tail DIR [--over 2.0]
    PYTHONHASHSEED=0 python docs/tools/local_tail.py digest DIR

``tail`` replays DIR's IRC logs as the bench's first replay does (the counting stub) and
breaks the local stage's samples down by CPU time: how many first-round predictions the
addressee model made inside the reading (AddresseeModel._first computing rather than
finding one), and whether a collector pass ran inside. ``digest`` replays as the whole
bench does (the stub, then the local stage alone) and hashes every reading and every
first-round prediction at full precision; two trees that print the same digest made the
same predictions to the last bit (one PYTHONHASHSEED for both: set order reaches the rows).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import inspect
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from kuuki.bench import judge as bench
from kuuki.decide.addressing import reading
from kuuki.decide.models import addressee
from kuuki.decide.stages import local_score

passes: list[int] = []  # a collector pass's generation, as it ends
made = [0]  # first rounds computed


def _watch() -> None:
    gc.callbacks.append(lambda phase, info: passes.append(info["generation"])
                        if phase == "stop" else None)
    rows = addressee.addressee_rows

    def counted(*args: Any, **kw: Any) -> Any:
        made[0] += 1
        return rows(*args, **kw)

    addressee.addressee_rows = counted  # type: ignore[assignment]


async def _replay(directory: Path, *, local_too: bool) -> None:
    # as the command line runs it (a tree whose bench has no such choice never settled)
    settled = ({"settled": True} if "settled" in inspect.signature(bench.bench_file).parameters
               else {})
    with tempfile.TemporaryDirectory() as tmp:
        for k, path in enumerate(sorted(directory.glob("*.ascii.txt"))):
            for local_only in (False, True) if local_too else (False,):
                sub = Path(tmp) / f"{k}-{local_only}"
                sub.mkdir()
                await bench.bench_file(path, sub, local_only=local_only, **settled)


def tail(directory: Path, over: float, dump: Path | None = None) -> None:
    _watch()
    samples: list[tuple[float, int, bool]] = []  # CPU ms, first rounds made, a pass inside
    at: dict[int, tuple[int, int]] = {}
    read = reading.RoomReader.read

    def timed_read(self: reading.RoomReader, s: Any) -> reading.Reading:
        at[id(s)] = (made[0], len(passes))
        return read(self, s)

    run = local_score.LocalScore.run

    async def timed_run(self: local_score.LocalScore, case: Any) -> Any:
        start = at.pop(id(case.situation), (made[0], len(passes)))
        result = await run(self, case)
        # one is the message's own (its prediction, or its first round made unread)
        rounds = max(0, made[0] - start[0] - 1)
        samples.append((self.local_cpu_ms[-1], rounds, len(passes) > start[1]))
        return result

    reading.RoomReader.read = timed_read  # type: ignore[method-assign]
    local_score.LocalScore.run = timed_run  # type: ignore[method-assign]
    asyncio.run(_replay(directory, local_too=False))
    cpu = sorted(s[0] for s in samples)
    n = len(cpu)
    print(f"{n} samples; CPU p50 {cpu[n // 2]:.3f} ms, p99 {cpu[round(0.99 * (n - 1))]:.3f} ms")
    slow = [s for s in samples if s[0] > over]
    print(f"over {over} ms: {len(slow)}; with a collector pass inside: "
          f"{sum(1 for s in slow if s[2])}; made 4 or more earlier turns' first rounds: "
          f"{sum(1 for s in slow if s[1] >= 4)}")
    by: defaultdict[int, list[float]] = defaultdict(list)
    for ms, rounds, _ in samples:
        by[min(rounds, 10)].append(ms)
    print("first rounds made  samples  median CPU ms  over")
    for rounds, values in sorted(by.items()):
        values.sort()
        label = f"{rounds}+" if rounds == 10 else str(rounds)
        print(f"{label:>17}  {len(values):7}  {values[len(values) // 2]:13.2f}  "
              f"{sum(1 for v in values if v > over)}")
    print("collector passes by generation:", dict(Counter(passes)))
    if dump:
        dump.write_text("\n".join(f"{ms} {rounds} {int(gc_in)}" for ms, rounds, gc_in in samples))


def digest(directory: Path) -> None:
    seen, rounds = hashlib.sha1(), hashlib.sha1()
    count = [0, 0]
    read, first = reading.RoomReader.read, addressee.AddresseeModel._first

    def hashed_read(self: reading.RoomReader, s: Any) -> reading.Reading:
        r = read(self, s)
        count[0] += 1
        seen.update(repr((s.message.id, r.read, sorted(r.addressee.candidates.items()),
                          r.addressee.top, r.seat, r.live, r.named, r.called)).encode())
        return r

    def hashed_first(self: addressee.AddresseeModel, turns: Any, j: int, names: Any,
                     always: Any) -> dict[str, float]:
        out = first(self, turns, j, names, always)
        count[1] += 1
        rounds.update(repr((turns[j].speaker, turns[j].text, sorted(out.items()))).encode())
        return out

    reading.RoomReader.read = hashed_read  # type: ignore[method-assign]
    addressee.AddresseeModel._first = hashed_first  # type: ignore[method-assign]
    asyncio.run(_replay(directory, local_too=True))
    print(f"readings {count[0]} {seen.hexdigest()[:16]}  "
          f"first rounds {count[1]} {rounds.hexdigest()[:16]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("tail", "digest"))
    parser.add_argument("dir", type=Path)
    parser.add_argument("--over", type=float, default=2.0)
    parser.add_argument("--samples", type=Path, help="tail: write each sample (CPU ms, "
                        "first rounds made, a collector pass inside) to this file")
    args = parser.parse_args()
    started = time.perf_counter()
    tail(args.dir, args.over, args.samples) if args.what == "tail" else digest(args.dir)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
