"""kuuki (空気): an LLM persona that reads the room in group chats."""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version

# kuuki multiplies small matrices one chat message at a time (sentence embeddings, the
# disentangler, fact search). Multi-threaded BLAS only adds thread hand-offs there, and on a
# busy 2-core machine it made one embedding ~15x slower. Set before numpy is imported;
# an explicit setting in the environment wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

try:
    __version__ = version("kuuki")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = ["__version__"]
