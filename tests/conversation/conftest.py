from __future__ import annotations

import itertools
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from kuuki.testing.corpora import require


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
def irc_data(corpora: Path) -> Path:
    irc = corpora / "irc-disentanglement"
    require(irc / "train", "the Ubuntu IRC disentanglement corpus")
    return irc


@pytest.fixture
def mrmp_data(corpora: Path) -> Path:
    mrmp = corpora / "mrmp"
    require(mrmp / "dialogues" / "dev", "the MRMP corpus")
    return mrmp
