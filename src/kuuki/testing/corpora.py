"""Where the tests find the two corpora (README, "Corpora"), and what a corpus test says
when they are not there.

The folder is ``$KUUKI_DATA_DIR`` (the variable the commands read too), else
``../shared/data`` beside the checkout. A missing corpus skips the test on a developer's
machine and fails it under ``CI=true``, as a missing service does: the corpus tests are
real tests, so a CI without the data is a broken CI. Either way the message says where
to put the data.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

from kuuki.settings.data import DATA_ENV
from kuuki.testing.services import in_ci

LAYOUT = "irc-disentanglement/{train,dev} and mrmp/dialogues/{train,dev}"


def corpora_dir(checkout: Path) -> Path:
    """``$KUUKI_DATA_DIR``, else ``shared/data`` beside ``checkout`` (the repository)."""
    raw = os.environ.get(DATA_ENV)
    return Path(raw) if raw else checkout.parent / "shared" / "data"


def require(path: Path, corpus: str) -> Path:
    """``path`` if it is a folder, else :func:`corpus_missing`."""
    if not path.is_dir():
        corpus_missing(corpus, path)
    return path


def corpus_missing(corpus: str, path: Path) -> NoReturn:
    """Skip the running test, or fail it under ``CI=true``, saying where the data goes."""
    import pytest  # only tests call this; the product never imports pytest

    where = (
        f"{corpus} not found: {path} is not a folder. Put the corpora ({LAYOUT}) in "
        f"../shared/data beside the checkout, or set {DATA_ENV} to the folder that holds "
        "them; README.md, \"Corpora\", says where they come from"
    )
    if in_ci():
        pytest.fail(f"{where} (CI=true: the corpus tests are real tests, so a missing "
                    "corpus fails them)")
    pytest.skip(where)
