"""Which model writes the bot's words, whether it is loaded, and how to plug in another.

The local front ends tell the truth about the model: when replies come from the tiny
model shipped with kuuki (SmolLM2-135M), a note says so and names the one line of
settings that plugs in the user's own; a local model is loaded once at start-up
(`ModelLoader.load`), with a visible "loading the model…" state while it loads; and a
model behind an OpenAI-compatible address is asked for one token at start-up (``check``:
the playground and `kuuki chat`), so a dead address reads "cannot reach the model" before
anyone talks, not "ready" until the first reply fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from kuuki.llm.base import LLM, ChatMessage, Warmable
from kuuki.llm.embedded import EmbeddedLLM
from kuuki.llm.openai_compat import OpenAICompatLLM
from kuuki.llm.scheduler import ScheduledLLM
from kuuki.text.secrets import redact

if TYPE_CHECKING:
    from kuuki.app import App

State = Literal["off", "loading", "ready", "failed"]
CHECK_TIMEOUT_S = 30.0  # a remote model that says nothing for this long is not reachable

PLUG_IN: tuple[tuple[str, str], ...] = (
    ("Ollama", "KUUKI_LLM=openai KUUKI_LLM_BASE_URL=http://localhost:11434/v1 "
               "KUUKI_LLM_MODEL=llama3.2"),
    ("any OpenAI-compatible endpoint", "KUUKI_LLM=openai KUUKI_LLM_BASE_URL=https://…/v1 "
                                       "KUUKI_LLM_MODEL=… KUUKI_LLM_API_KEY=…"),
    ("a GGUF file", "KUUKI_LLM_MODEL_PATH=/path/model.gguf"),
)


def _inner(llm: LLM | None) -> LLM | None:
    return llm.inner if isinstance(llm, ScheduledLLM) else llm


def shipped_model(llm: LLM | None) -> bool:
    """True when replies come from the tiny model shipped with kuuki."""
    inner = _inner(llm)
    return isinstance(inner, EmbeddedLLM) and inner.shipped


@dataclass(frozen=True, slots=True)
class ModelStatus:
    name: str | None  # None: generation is off
    shipped: bool
    local: bool  # loaded into this process (it has a load to wait for)
    state: State
    load_s: float | None = None
    error: str = ""
    remote: str = ""  # the address of a model behind an OpenAI-compatible API, checked

    def note(self) -> str | None:
        """The sentence about the tiny model, when it is the one in use."""
        if not self.shipped:
            return None
        return (f"A tiny built-in model ({self.name}) writes the replies: it shows how "
                "kuuki reads the room, not how well a real model writes.")

    def headline(self) -> str:
        """'loading the model SmolLM2-135M-Instruct…', 'model ready (0.4 s)', …"""
        if self.state == "off":
            return "no model: generation is off"
        if self.state == "loading" and self.remote and not self.local:
            return f"checking the model {self.name} at {self.remote}…"
        if self.state == "loading":
            return f"loading the model {self.name}…"
        if self.state == "failed" and self.remote and not self.local:
            error = self.error.removeprefix(f"{self.remote}: ")  # the address is said once
            return (f"cannot reach the model {self.name} at {self.remote}: {error} — "
                    "a message to the bot gets an emoji until it answers")
        if self.state == "failed":
            return f"the model {self.name} could not be loaded: {self.error}"
        took = f" in {self.load_s:.1f} s" if self.local and self.load_s is not None else ""
        answered = " (it answered)" if self.remote and not self.local else ""
        return f"model {self.name} ready{took}{answered}"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["headline"] = self.headline()
        note = self.note()
        out["note"] = None if note is None else {
            "text": note, "plug_in": [{"label": label, "line": line} for label, line in PLUG_IN],
        }
        return out


class ModelLoader:
    """Loads the app's local models once, and with ``check`` asks its remote ones for one
    token, and tells listeners how that goes."""

    def __init__(self, app: App, *, check: bool = False) -> None:
        self.app = app
        llm = app.llm
        local = any(isinstance(m.inner, Warmable) for m in app.models)
        self._remote = [m.inner for m in app.models
                        if check and isinstance(m.inner, OpenAICompatLLM)]
        remote = ", ".join(dict.fromkeys(r.base_url for r in self._remote))
        self.status = ModelStatus(
            name=llm.name if llm is not None else None,
            shipped=shipped_model(llm),
            local=local,
            state="off" if llm is None else "loading" if local or remote else "ready",
            remote=remote,
        )
        self._listeners: list[Callable[[ModelStatus], None]] = []
        self._task: asyncio.Task[None] | None = None

    def on_change(self, listener: Callable[[ModelStatus], None]) -> None:
        self._listeners.append(listener)

    async def load(self) -> ModelStatus:
        """Load every local model now (the first message must not wait for it), once.

        Never raises: a model that cannot be loaded leaves the status "failed" with the
        reason, and the bot goes on with its safe defaults (a reaction when addressed).
        Callers that come while it loads wait for the same load.
        """
        if self.status.state != "loading":
            return self.status
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._load())
        await asyncio.shield(self._task)
        return self.status

    async def close(self) -> None:
        """Stop waiting for a load still under way (shutdown during start-up)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _load(self) -> None:
        start = time.perf_counter()
        try:
            await self.app.warm()
            for remote in self._remote:
                await asyncio.wait_for(
                    remote.complete([ChatMessage("user", "Say OK.")], max_tokens=1),
                    CHECK_TIMEOUT_S)
        except TimeoutError:
            self._set(replace(self.status, state="failed",
                              error=f"no answer within {CHECK_TIMEOUT_S:.0f} s"))
        except Exception as exc:  # LLMError, or llama.cpp's own errors from a bad file
            error = redact(str(exc)) or type(exc).__name__
            self._set(replace(self.status, state="failed", error=error))
        else:
            self._set(replace(self.status, state="ready", load_s=time.perf_counter() - start))

    def _set(self, status: ModelStatus) -> None:
        self.status = status
        for listener in self._listeners:
            listener(status)
