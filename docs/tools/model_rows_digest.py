"""A digest of every feature row and prediction the addressee and seat models make on the
dev splits: both rounds' rows of each message (the training rows, augmented copies
included), each prediction with its candidates' probabilities, and each seat's p.

Two versions of the models' code read the same when they print the same digest. Run both
with the same PYTHONHASHSEED: the n-gram weights of a turn are added in the order of a
set of strings, which follows Python's string hashing, so the last bit of a content
feature can differ between two processes of the same code (the printed figures of
`kuuki eval addressee` do not).

    PYTHONHASHSEED=0 python docs/tools/model_rows_digest.py \
        ../shared/data/mrmp/dialogues/dev ../shared/data/irc-disentanglement/dev
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np

from kuuki.decide.models.addressee import AddresseeModel
from kuuki.decide.models.seat import SeatModel
from kuuki.decide.training.evaluate import read_chats
from kuuki.decide.training.learn import SILENT, SILENT_NAMES, augmented


def digest(directory: Path) -> str:
    h = hashlib.sha256()
    _, chats = read_chats(directory)
    model = AddresseeModel.shipped()
    seat = SeatModel.shipped(cache=model.cache)
    training = AddresseeModel.shipped()
    for chat in chats:
        names = {**chat.names, SILENT: SILENT_NAMES}
        for i in range(len(chat.turns)):
            r = model.predict(chat.turns, i, names, always=(SILENT,))
            h.update(repr((r.to, r.p, sorted(r.candidates.items()), r.top)).encode())
            assert r.rows is not None
            h.update(np.ascontiguousarray(r.rows).tobytes())
            for key in (*[k for k in chat.names if k != chat.turns[i].speaker][:2], SILENT):
                s = seat.predict(chat.turns, i, key, names, r)
                h.update(repr((s.p, s.short, s.top, s.content)).encode())
            if i not in chat.labels:
                continue
            copy = augmented(chat, i)
            for turns in (chat.turns,) if copy is None else (chat.turns, copy):
                for second in (False, True):
                    keys, x = training.rows(turns, i, names, (SILENT,), second=second)
                    h.update(repr(keys).encode())
                    h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()[:12]


def main(argv: list[str]) -> None:
    every = hashlib.sha256()
    for arg in argv:
        d = digest(Path(arg))
        every.update(d.encode())
        print(arg, d)
    print("ALL", every.hexdigest()[:12])


if __name__ == "__main__":
    main(sys.argv[1:])
