"""Sentence embeddings: the `Embedder` contract and the default static multilingual table
(`static`, built by `distill`), with USE v3 as the reference it was distilled from.
"""

from kuuki.embed.embedder import (
    BatchPrefetcher,
    Embedder,
    USEEmbedder,
    default_embedder,
)

__all__ = [
    "BatchPrefetcher",
    "Embedder",
    "USEEmbedder",
    "default_embedder",
]
