from __future__ import annotations

import itertools
import os
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from kuuki.testing.services import service_missing

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = Path(os.environ.get("KUUKI_SHARED_DATA", REPO.parent / "shared" / "data"))
IRC_DATA = SHARED_DATA / "irc-disentanglement"
MRMP_DATA = SHARED_DATA / "mrmp"


class BigramEmbedder:
    """Deterministic stand-in for USE: hashed character bigrams, L2-normalised.

    Texts sharing words get similar vectors, which is all the tests need, and it costs
    nothing to load.
    """

    dim = 512
    related = 0.45  # the Embedder protocol's cosine scale point

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += len(texts)
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            t = t.lower()
            for a, b in itertools.pairwise(t):
                out[i, zlib.crc32((a + b).encode()) % self.dim] += 1.0
            n = np.linalg.norm(out[i])
            out[i] = out[i] / n if n else out[i]
        return out


@pytest.fixture
def embedder() -> BigramEmbedder:
    return BigramEmbedder()


@pytest.fixture
def irc_data() -> Path:
    if not (IRC_DATA / "train").is_dir():
        service_missing("the IRC disentanglement data", f"{IRC_DATA} has no train split")
    return IRC_DATA


@pytest.fixture
def mrmp_data() -> Path:
    if not (MRMP_DATA / "dialogues" / "dev").is_dir():
        service_missing("the MRMP corpus", f"{MRMP_DATA} has no dev split")
    return MRMP_DATA
