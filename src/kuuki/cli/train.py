"""The commands that build the shipped models or score them: `kuuki disentangle`, `eval`
and `train`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kuuki.settings.data import shared_data


# The corpora's folder for the commands' defaults and the corpus tests (README, "Corpora").
def cmd_disentangle(args: argparse.Namespace) -> int:
    from kuuki.conversation.cli import run_disentangle

    run_disentangle(Path(args.file), args.start, sys.stdout)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from kuuki.conversation.cli import run_eval

    run_eval(Path(args.dir), sys.stdout)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from kuuki.conversation.cli import run_train

    run_train(Path(args.data), Path(args.out) if args.out else default_weights(), sys.stdout)
    return 0


def cmd_train_embeddings(args: argparse.Namespace) -> int:
    from kuuki.embed.distill import default_table_path, distill

    distill(Path(args.out) if args.out else default_table_path(), out=sys.stdout)
    return 0


def default_weights() -> Path:
    from kuuki.conversation import model as _model

    return Path(_model.__file__).with_name(_model.WEIGHTS_FILE)


def data_dir() -> Path:
    return shared_data() / "irc-disentanglement"


def cmd_train_addressee(args: argparse.Namespace) -> int:
    from kuuki.decide.models import addressee
    from kuuki.decide.training import learn

    chats = learn.load_chats(_dir(args.irc), _dir(args.mrmp))
    model = learn.train_addressee(chats, out=sys.stdout)
    path = Path(args.out) if args.out else _packaged(addressee.WEIGHTS_FILE)
    model.save(path)
    print(f"wrote {path}")
    return 0


def cmd_train_seat(args: argparse.Namespace) -> int:
    from kuuki.decide.models import seat
    from kuuki.decide.models.addressee import AddresseeModel
    from kuuki.decide.training import learn

    chats = learn.load_chats(_dir(args.irc), _dir(args.mrmp))
    first = AddresseeModel.load(Path(args.addressee)) if args.addressee else (
        AddresseeModel.shipped())
    model = learn.train_seat(first, chats, out=sys.stdout)
    path = Path(args.out) if args.out else _packaged(seat.WEIGHTS_FILE)
    model.save(path)
    print(f"wrote {path}")
    return 0


def cmd_eval_addressee(args: argparse.Namespace) -> int:
    from kuuki.decide.training.evaluate import run_eval_addressee

    return run_eval_addressee([Path(d) for d in args.dir], args.json, args.seat, sys.stdout,
                              speed=args.speed)


def cmd_addressee(args: argparse.Namespace) -> int:
    from kuuki.cli.common import settings_for
    from kuuki.replay.addressee import run_addressee

    return run_addressee(settings_for(args), Path(args.file), sys.stdout,
                         skip_bad_lines=args.skip_bad_lines)


def _dir(raw: str) -> Path | None:
    return Path(raw) if raw else None


def _packaged(name: str) -> Path:
    from kuuki.decide.models.features import shipped_path

    return shipped_path(name)
