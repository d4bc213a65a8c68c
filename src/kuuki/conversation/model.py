"""The reply-parent scorer: a tiny MLP with a linear skip path, numpy only.

Each candidate parent (the message itself included, meaning "new conversation") gets a
score ``w·z + v·tanh(W z + b)`` from its standardised feature row ``z``; a softmax over
the candidates of one message gives the link probabilities. The shipped weights live in
``weights.npz`` beside this module, the output of :func:`kuuki.conversation.train.train`
(bit for bit on the machine that made it; see its docstring).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kuuki.conversation.features import FEATURE_NAMES, N_FEATURES
from kuuki.errors import ConfigError

FloatArray = npt.NDArray[np.float32]

WEIGHTS_FILE = "weights.npz"


@dataclass(slots=True)
class DisentanglerModel:
    """Parameters of the candidate scorer (see module docstring)."""

    mean: FloatArray
    std: FloatArray
    w: FloatArray  # (F,) linear path
    w1: FloatArray  # (F, H)
    b1: FloatArray  # (H,)
    v: FloatArray  # (H,)
    # (D, D) reply-tuned similarity of the embedder the model was trained with (see
    # kuuki.conversation.similarity); None for a model without one
    proj: FloatArray | None = None

    @classmethod
    def init(
        cls, hidden: int, rng: np.random.Generator, mean: FloatArray, std: FloatArray
    ) -> DisentanglerModel:
        f = N_FEATURES
        return cls(
            mean=mean.astype(np.float32),
            std=std.astype(np.float32),
            w=np.zeros(f, np.float32),
            w1=(rng.standard_normal((f, hidden)) / np.sqrt(f)).astype(np.float32),
            b1=np.zeros(hidden, np.float32),
            v=(rng.standard_normal(hidden) / np.sqrt(hidden)).astype(np.float32),
        )

    @property
    def hidden(self) -> int:
        return int(self.b1.shape[0])

    def scores(self, x: FloatArray) -> FloatArray:
        """Scores of the rows of ``x`` (any leading shape, last axis = features)."""
        # in place where a temporary would be made: the same values, fewer allocations
        z = x - self.mean
        z /= self.std
        h = z @ self.w1
        h += self.b1
        np.tanh(h, out=h)
        out = z @ self.w + h @ self.v
        return out.astype(np.float32, copy=False)

    def probabilities(self, x: FloatArray) -> FloatArray:
        s = self.scores(x)
        # what s.max() and s.sum() reduce with, called without their Python-level wrapper
        s -= np.maximum.reduce(s, axis=None)
        np.exp(s, out=s)
        s /= np.add.reduce(s, axis=None)
        return s

    @classmethod
    def average(cls, models: list[DisentanglerModel]) -> DisentanglerModel:
        """One model whose score is the mean of the given models' scores.

        The models must share the standardisation; their hidden layers are laid side by
        side, so an ensemble costs one (wider) matrix product at run time.
        """
        k = float(len(models))
        return cls(
            mean=models[0].mean,
            std=models[0].std,
            w=(np.sum([m.w for m in models], axis=0) / k).astype(np.float32),
            w1=np.concatenate([m.w1 for m in models], axis=1),
            b1=np.concatenate([m.b1 for m in models]),
            v=(np.concatenate([m.v for m in models]) / k).astype(np.float32),
            proj=models[0].proj,
        )

    def projection(self, dim: int) -> FloatArray | None:
        """``proj`` if it fits vectors of ``dim`` (another embedder's vectors: plain cosine)."""
        if self.proj is not None and self.proj.shape == (dim, dim):
            return self.proj
        return None

    def params(self) -> dict[str, FloatArray]:
        return {"w": self.w, "w1": self.w1, "b1": self.b1, "v": self.v}

    def save(self, path: Path) -> None:
        arrays: dict[str, npt.NDArray[np.generic]] = {
            "mean": self.mean,
            "std": self.std,
            "w": self.w,
            "w1": self.w1,
            "b1": self.b1,
            "v": self.v,
            "features": np.array(FEATURE_NAMES),
        }
        if self.proj is not None:
            arrays["proj"] = self.proj
        np.savez_compressed(path, **arrays)  # type: ignore[arg-type]

    @classmethod
    def load(cls, path: Path | None = None) -> DisentanglerModel:
        """Load weights (default: the file shipped in the package)."""
        if path is None:
            ref = resources.files("kuuki.conversation").joinpath(WEIGHTS_FILE)
            with resources.as_file(ref) as p:
                return cls.load(Path(p))
        try:
            with np.load(path, allow_pickle=False) as z:
                names = tuple(str(n) for n in z["features"])
                if names != FEATURE_NAMES:
                    raise ConfigError(
                        "conversation.weights", f"{path} was trained on other features"
                    )
                proj = z["proj"].astype(np.float32) if "proj" in z.files else None
                return cls(
                    **{k: z[k].astype(np.float32) for k in ("mean", "std", "w", "w1", "b1", "v")},
                    proj=proj,
                )
        except (OSError, KeyError, ValueError) as exc:
            raise ConfigError("conversation.weights", f"cannot read {path}: {exc}") from exc


_shipped: DisentanglerModel | None = None


def shipped_model() -> DisentanglerModel:
    """The packaged weights, loaded once per process."""
    global _shipped
    if _shipped is None:
        _shipped = DisentanglerModel.load()
    return _shipped
