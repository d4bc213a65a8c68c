"""Where the corpora are (README, "Corpora"): ``$KUUKI_DATA_DIR``, else ``../shared/data``
beside the checkout. `kuuki train`, `kuuki eval` and the corpus tests read the same place."""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "KUUKI_DATA_DIR"


def shared_data() -> Path:
    """The corpora's folder: ``$KUUKI_DATA_DIR``, else ../shared/data (beside the checkout,
    run from it)."""
    return Path(os.environ.get(DATA_ENV) or "../shared/data")
