"""The commands that build the shipped models or score them: `kuuki disentangle`, `eval`
and `train`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


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
    return Path("../shared/data/irc-disentanglement")
