"""`kuuki train addressee|seat` reproduce the shipped models from the train splits of the
corpora (a few minutes each: the whole training, as a user would run it).

Reproduced means the same model, not the same bytes. Newton's method sums over ~600,000
candidate rows; another machine's BLAS adds them in another order, and the last bits of the
weights differ (on another x86-64 machine with the same wheels the ``.npz`` bytes did). A
retrained model must hold to the shipped one in three ways:

- **weights**: every weight of the addressee model's two rounds and of the seat model
  within ``ATOL + RTOL * |shipped|``, RTOL 1e-4 and ATOL 1e-6 (the weights are on raw
  features, largest ~14). Training stops when a Newton step lowers the loss by less than
  1e-7 of it, so the weights are settled to about that, not to the last bit: the perturbed
  training below moved them by up to 1.8e-6 relative, 1.8e-7 absolute. The bounds leave a
  factor of ~50 over that for a machine whose sums differ more, and stay well under the
  smallest weight that is not 0 (3e-4). The seat model is trained on the shipped addressee
  model, so that it reads the same probabilities.
- **the seat model's predictions on every message of the dev splits** (Ubuntu IRC and
  MRMP, ~20,500 messages): each seat's ``p`` and ``short`` (the addressee model's live
  candidates and a member who never spoke) within ``P_ATOL`` 5e-4, equal to the third
  decimal (measured under the perturbation: 1.3e-8).
- **the addressee model's trees rank as well**: the same number of trees, of the same
  depth, and on each dev split the share of messages whose gold addressee is the most
  likely within ``ACC_TOL`` of the shipped model's, and the same most likely addressee on
  at least ``AGREE`` of all dev messages. Not the same trees: boosting is chaotic. A tree's
  split moves the scores every later tree fits, so a last-bit change in what the first
  tree reads (the linear score and the first round's predictions, from Newton's weights)
  grows, tree by tree, into other trees. Measured on the train rows with the linear weights
  moved 2e-6 relative and the first round's predictions 1e-8: no tree the same, and with
  every input rounded to a grid only the first 23 of 300 (docs/decisions.md). What stays is
  how well they rank (the measured figures: ACC_TOL's comment).

The second test is the check that these bounds are not a coincidence of this machine: it
retrains with the floating-point sums perturbed (every Newton step's gradient and Hessian
moved one ulp, up or down at random per element, and the chats in another order, so every
sum over rows adds in another order) and holds that model to the same bounds. (The trees
see their rows in one order whatever order the chats were read in: `learn.Groups.canonical`.)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from kuuki.cli import main
from kuuki.decide.models.addressee import ROOM, AddresseeModel
from kuuki.decide.models.seat import SeatModel
from kuuki.decide.models.turns import Labelled
from kuuki.decide.training import learn
from kuuki.decide.training.evaluate import read_chats
from kuuki.decide.training.learn import SILENT, SILENT_NAMES
from kuuki.testing.corpora import require

DECIDE = Path(__file__).resolve().parents[3] / "src" / "kuuki" / "decide" / "models"
SHIPPED = (DECIDE / "addressee.npz", DECIDE / "seat.npz")
RTOL, ATOL = 1e-4, 1e-6
P_ATOL = 5e-4
# Under this test's perturbation the retrained trees give the same share right on both
# splits and the same most likely addressee on 100.00 % of dev messages; moving the linear
# weights 2e-6 relative and the first round's predictions 1e-8 everywhere
# (docs/tools/ranker_stability.py) grows other trees, 0.2 points apart on each split.
ACC_TOL = 0.006
AGREE = 0.95
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Splits:
    irc_train: Path
    mrmp_train: Path
    dev: dict[str, list[Labelled]]  # the dev split's chats of each corpus


@dataclass(frozen=True, slots=True)
class Predictions:
    to: list[str]  # the most likely addressee of each dev message
    right: dict[str, float]  # per dev split, the share of labelled messages it gets right
    seat: FloatArray  # p and short of every seat, message by message (sorted seats)


@pytest.fixture(scope="module")
def splits(corpora: Path) -> Splits:
    irc, mrmp = corpora / "irc-disentanglement", corpora / "mrmp" / "dialogues"
    corpus = "the Ubuntu IRC disentanglement corpus"
    for split in ("train", "dev"):
        require(irc / split, corpus)
        require(mrmp / split, "the MRMP corpus")
    dev = {"irc": read_chats(irc / "dev")[1], "mrmp": read_chats(mrmp / "dev")[1]}
    return Splits(irc / "train", mrmp / "train", dev)


@pytest.fixture(scope="module")
def shipped(splits: Splits) -> Predictions:
    return predictions(*SHIPPED, splits.dev)


def predictions(addressee_path: Path, seat_path: Path, dev: dict[str, list[Labelled]]
                ) -> Predictions:
    """Both models' answers on every message of the dev splits, as the bot asks them (the
    persona a member who never spoke, in ``always``)."""
    addressee, seat = AddresseeModel.load(addressee_path), SeatModel.load(seat_path)
    to: list[str] = []
    right: dict[str, float] = {}
    seats: list[float] = []
    for split, chats in dev.items():
        hits = labelled = 0
        for chat in chats:
            names = {**chat.names, SILENT: SILENT_NAMES}
            for i in range(len(chat.turns)):
                result = addressee.predict(chat.turns, i, names, always=(SILENT,))
                to.append(result.to)
                if i in chat.labels and chat.labels[i] in result.candidates:
                    labelled += 1
                    hits += result.to == chat.labels[i]
                for key in [*sorted(k for k in result.candidates if k not in (ROOM, SILENT)),
                            SILENT]:
                    answer = seat.predict(chat.turns, i, key, names, result)
                    seats += [answer.p, answer.short]
        right[split] = hits / labelled
    return Predictions(to, right, np.array(seats))


def retrain(splits: Splits, out: Path) -> tuple[Path, Path]:
    """`kuuki train addressee`, then `kuuki train seat` (on the shipped addressee model, so
    that the seat model reads the same probabilities), as the README gives them."""
    addressee, seat = out / "addressee.npz", out / "seat.npz"
    data = ["--irc", str(splits.irc_train), "--mrmp", str(splits.mrmp_train)]
    assert main(["train", "addressee", *data, "--out", str(addressee)]) == 0
    assert main(["train", "seat", *data, "--addressee", str(SHIPPED[0]),
                 "--out", str(seat)]) == 0
    return addressee, seat


def weights(addressee: Path, seat: Path) -> dict[str, FloatArray]:
    a, s = AddresseeModel.load(addressee), SeatModel.load(seat)
    return {"addressee.first": a.first, "addressee.second": a.second,
            "seat.w_p": s.w_p, "seat.w_short": s.w_short}


def assert_the_shipped_model(addressee: Path, seat: Path, splits: Splits,
                             shipped: Predictions) -> None:
    new, old = weights(addressee, seat), weights(*SHIPPED)
    for name in old:
        np.testing.assert_allclose(new[name], old[name], rtol=RTOL, atol=ATOL, err_msg=name)
    trees, ours = AddresseeModel.load(addressee).forest, AddresseeModel.load(SHIPPED[0]).forest
    assert trees is not None and ours is not None, "a model without its trees"
    assert (trees.trees, trees.depth) == (ours.trees, ours.depth)
    seats = predictions(SHIPPED[0], seat, splits.dev)
    assert seats.seat.shape == shipped.seat.shape
    np.testing.assert_allclose(seats.seat, shipped.seat, rtol=0, atol=P_ATOL)
    got = predictions(addressee, SHIPPED[1], splits.dev)
    agree = np.mean([a == b for a, b in zip(got.to, shipped.to, strict=True)])
    print(f"retrained: right {got.right} (shipped {shipped.right}), the same most likely "
          f"addressee on {agree:.2%} of {len(got.to)} dev messages")
    for split, share in shipped.right.items():
        assert abs(got.right[split] - share) <= ACC_TOL, (split, got.right[split], share)
    assert agree >= AGREE


def test_training_reproduces_the_shipped_models(
    tmp_path: Path, splits: Splits, shipped: Predictions
) -> None:
    assert_the_shipped_model(*retrain(splits, tmp_path), splits, shipped)


def test_the_same_models_when_the_sums_are_perturbed_in_the_last_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, splits: Splits, shipped: Predictions
) -> None:
    rng = np.random.default_rng(33)
    solve = np.linalg.solve
    steps = 0

    def ulp(a: FloatArray) -> FloatArray:
        towards = np.where(rng.random(a.shape) < 0.5, -np.inf, np.inf)
        moved: FloatArray = np.nextafter(a, towards)
        return moved

    def perturbed_solve(h: FloatArray, grad: FloatArray) -> Any:
        nonlocal steps
        steps += 1
        return solve(ulp(h), ulp(grad))

    load = learn.load_chats

    def shuffled(*args: Any, **kwargs: Any) -> list[Labelled]:
        chats = load(*args, **kwargs)
        random.Random(33).shuffle(chats)
        return chats

    monkeypatch.setattr(np.linalg, "solve", perturbed_solve)
    monkeypatch.setattr(learn, "load_chats", shuffled)
    addressee, seat = retrain(splits, tmp_path)
    monkeypatch.undo()
    # the perturbation reached every fit (2 rounds, 2 seat regressions: several Newton
    # steps each) and changed the weights' bits, or this test would prove nothing
    assert steps >= 8
    new, old = weights(addressee, seat), weights(*SHIPPED)
    assert all(not np.array_equal(new[name], old[name]) for name in old)
    assert_the_shipped_model(addressee, seat, splits, shipped)
