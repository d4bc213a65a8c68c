"""`kuuki train addressee|seat` reproduce the weights the package ships, byte for byte,
from the train splits in ../shared/data (a few minutes: the whole training, as a user
would run it)."""

from __future__ import annotations

import os
from pathlib import Path

from kuuki.cli import main
from kuuki.testing.services import service_missing

DECIDE = Path(__file__).resolve().parents[2] / "src" / "kuuki" / "decide"
DATA = Path(os.environ.get("KUUKI_SHARED_DATA", Path(__file__).resolve().parents[3]
                           / "shared" / "data"))


def test_training_reproduces_the_shipped_weights(tmp_path: Path) -> None:
    irc = DATA / "irc-disentanglement" / "train"
    mrmp = DATA / "mrmp" / "dialogues" / "train"
    if not (irc.is_dir() and mrmp.is_dir()):
        service_missing("the IRC and MRMP train splits", f"not under {DATA}")
    addressee, seat = tmp_path / "addressee.npz", tmp_path / "seat.npz"
    common = ["--irc", str(irc), "--mrmp", str(mrmp)]
    assert main(["train", "addressee", *common, "--out", str(addressee)]) == 0
    assert addressee.read_bytes() == (DECIDE / "addressee.npz").read_bytes()
    assert main(["train", "seat", *common, "--addressee", str(addressee),
                 "--out", str(seat)]) == 0
    assert seat.read_bytes() == (DECIDE / "seat.npz").read_bytes()
