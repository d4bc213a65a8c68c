"""The OpenAI-compatible back-end: any server that speaks ``/v1/chat/completions``.

OpenAI itself, vLLM, Ollama, llama.cpp's server, LM Studio… Retries are done here rather
than by the SDK (which gets ``max_retries=0``) so that backoff waits go through an
injectable ``sleep`` and tests never really wait. Structured output asks for
``response_format: json_schema`` first and steps down to plain JSON mode, with the
schema spelt out in the prompt, when a server rejects that.

Every failure leaves `complete` as an `LLMError` (the port's contract): a 200 whose body
is not JSON, or JSON that is not a chat completion, is `LLMUnavailable` (the server is
broken, which the circuit breaker must hear about), not a Python error from deep inside
the SDK. A 429 is waited out only when its ``Retry-After`` fits this call's own patience
(``backoff_max_s``); a longer one ends the call at once with ``retry_after`` set, so the
breaker keeps every caller away for that long instead of each retrying every few seconds.

Tools go through the standard ``tools`` / ``tool_calls`` fields, with ``tool_choice`` said
explicitly ("auto"): llama-cpp-python's function-calling chat format offers no tools when
it is left out. A server that rejects ``tools`` (400/422) is remembered as unable, and the
reply is written without them (`tool_support` then says why, for the trace).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import openai
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from openai.types.chat import ChatCompletionMessageParam

from kuuki.errors import LLMBadOutput, LLMError, LLMTimeout, LLMUnavailable
from kuuki.llm.base import ChatMessage, Completion, ToolSpec, Usage
from kuuki.llm.openai_wire import (
    FormatRejected,
    cause_of,
    json_request,
    retry_after_of,
    status_message,
    tool_calls_of,
    wire_message,
    without_userinfo,
)
from kuuki.llm.schema import parse_json
from kuuki.text.secrets import redact, remember, remember_url

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]

# Ways to ask for JSON, strictest first. "json_object+schema" is the llama.cpp/Anyscale
# extension that passes the schema inside json_object mode; servers that predate
# json_schema often constrain their output with it.
_JSON_MODES = ("json_schema", "json_object+schema", "json_object")

# HTTP statuses with which a server says "I do not understand this request format".
_REJECTED = (openai.BadRequestError, openai.UnprocessableEntityError)
# The longest Retry-After honoured; a server asking for more is probably confused.
RETRY_AFTER_MAX_S = 300.0


class _Retryable(Exception):
    """A failure worth another attempt after a pause (429, 5xx, connection trouble)."""

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.retry_after = retry_after


class OpenAICompatLLM:
    """An `LLM` that calls an OpenAI-compatible chat-completions endpoint.

    A call is tried ``1 + max_retries`` times when the server answers 429 or 5xx or cannot
    be reached, pausing ``backoff_s * 2**attempt`` (capped at ``backoff_max_s``, with
    up to 50 % random jitter, or the server's Retry-After if longer) between attempts.
    A timeout is not retried: the caller's time budget is already spent.
    """

    def __init__(
        self,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        *,
        timeout_s: float = 30.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        backoff_max_s: float = 8.0,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
        name: str | None = None,
    ) -> None:
        # The key and a password in the URL join the secrets every error is cleaned of
        # (kuuki.text.secrets); the URL is shown, and handed to the HTTP client, without
        # its password, which goes as HTTP Basic credentials (as httpx would send it).
        remember(api_key)
        remember_url(base_url)
        plain, basic = without_userinfo(base_url)
        self.model = model
        self.name = name or model
        self.base_url = redact(base_url)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.timeout_s = timeout_s
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._client = AsyncOpenAI(
            # Local servers take no key, but the SDK insists on one.
            base_url=plain,
            api_key=api_key or "not-needed",
            timeout=timeout_s,
            max_retries=0,
            http_client=None if basic is None else DefaultAsyncHttpxClient(auth=basic),
        )
        self._json_modes = list(_JSON_MODES)
        self._tools_refused: str | None = None

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    async def __aenter__(self) -> OpenAICompatLLM:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion:
        start = time.monotonic()
        failure: LLMError
        try:
            response = await self._request(messages, json_schema, max_tokens, temperature)
            return self._completion(response, json_schema, (time.monotonic() - start) * 1000)
        except LLMError as exc:
            failure = exc
        except Exception as exc:  # the SDK parsing an answer that is not a completion
            failure = LLMUnavailable(
                f"{self.base_url} sent something that is not a chat completion "
                f"({type(exc).__name__}: {redact(str(exc))[:200]})"
            )
        # Raised outside the except block so a cleaned error carries no __context__.
        raise _cleaned(failure)

    def tool_support(self) -> str | None:
        return self._tools_refused

    async def complete_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion:
        if self._tools_refused is not None:
            return await self.complete(messages, max_tokens=max_tokens, temperature=temperature)
        start = time.monotonic()
        failure: LLMError
        try:
            try:
                response = await self._with_retries(
                    messages, None, max_tokens, temperature, tools=tools
                )
            except FormatRejected as exc:
                self._tools_refused = f"{self.base_url} rejected tools ({redact(str(exc))})"
                log.info("%s; replying without tools from now on", self._tools_refused)
                return await self.complete(
                    messages, max_tokens=max_tokens, temperature=temperature
                )
            return self._completion(response, None, (time.monotonic() - start) * 1000,
                                    calls=True)
        except LLMError as exc:
            failure = exc
        except Exception as exc:
            failure = LLMUnavailable(
                f"{self.base_url} sent something that is not a chat completion "
                f"({type(exc).__name__}: {redact(str(exc))[:200]})"
            )
        raise _cleaned(failure)

    async def _request(
        self,
        messages: Sequence[ChatMessage],
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
    ) -> Any:
        if json_schema is None:
            return await self._with_retries(messages, None, max_tokens, temperature)
        while True:
            mode = self._json_modes[0]
            request = json_request(messages, json_schema, mode)
            try:
                return await self._with_retries(request[0], request[1], max_tokens, temperature)
            except FormatRejected as exc:
                if len(self._json_modes) == 1:
                    raise LLMError(f"{self.base_url} rejected the request: {exc}") from exc
                # Remember for later calls: this server will not accept the mode. (A
                # concurrent call may have stepped down already.)
                log.info("%s rejected response_format %s; trying the next", self.base_url, mode)
                if self._json_modes[0] == mode:
                    self._json_modes.pop(0)

    async def _with_retries(
        self,
        messages: Sequence[ChatMessage],
        response_format: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
        *,
        tools: Sequence[ToolSpec] | None = None,
    ) -> Any:
        attempt = 0
        while True:
            try:
                return await self._attempt(
                    messages, response_format, max_tokens, temperature, tools
                )
            except _Retryable as exc:
                after = exc.retry_after
                if after is not None and after > self.backoff_max_s:
                    # Longer than this call will wait: tell the breaker, which keeps every
                    # caller away until then (bounded), instead of retrying every 8 s.
                    wait = min(after, RETRY_AFTER_MAX_S)
                    raise LLMUnavailable(
                        f"{self.base_url}: {exc}, asked to wait {after:g}s", retry_after=wait
                    ) from exc
                if attempt >= self.max_retries:
                    raise LLMUnavailable(
                        f"{self.base_url}: {exc} (gave up after {attempt + 1} attempts)",
                        retry_after=after,
                    ) from exc
                delay = self._backoff(attempt, after)
                log.warning(
                    "%s: %s; retry %d/%d in %.2fs",
                    self.base_url,
                    exc,
                    attempt + 1,
                    self.max_retries,
                    delay,
                )
                await self._sleep(delay)
                attempt += 1

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        delay: float = min(self.backoff_s * 2.0**attempt, self.backoff_max_s)
        # Jitter spreads out clients that failed together, so they do not retry together.
        delay *= 1 + 0.5 * self._rng.random()
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.backoff_max_s))
        return delay

    async def _attempt(
        self,
        messages: Sequence[ChatMessage],
        response_format: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
        tools: Sequence[ToolSpec] | None = None,
    ) -> Any:
        extra: dict[str, Any] = {}
        if response_format is not None:
            extra["response_format"] = response_format
        if tools:
            extra["tools"] = [
                {"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }}
                for t in tools
            ]
            extra["tool_choice"] = "auto"
        try:
            return await self._client.chat.completions.create(
                model=self.model,
                messages=cast(
                    "list[ChatCompletionMessageParam]", [wire_message(m) for m in messages]
                ),
                max_tokens=max_tokens,
                temperature=temperature,
                **extra,
            )
        except openai.APITimeoutError as exc:
            raise LLMTimeout(f"{self.base_url} did not answer within {self.timeout_s}s") from exc
        except openai.APIConnectionError as exc:
            raise _Retryable(f"cannot connect ({cause_of(exc)})") from exc
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise LLMUnavailable(
                f"{self.base_url} refused the API key (HTTP {exc.status_code}); "
                "check the llm api_key setting"
            ) from exc
        except openai.RateLimitError as exc:
            raise _Retryable("rate limited (HTTP 429)", retry_after_of(exc)) from exc
        except openai.InternalServerError as exc:
            if response_format is not None and "response_format" in exc.message:
                # llama-cpp-python's server answers 500, not 400, to a format it lacks.
                raise FormatRejected(status_message(exc)) from exc
            raise _Retryable(f"server error (HTTP {exc.status_code})") from exc
        except openai.NotFoundError as exc:
            raise LLMUnavailable(
                f"{self.base_url} does not know model {self.model!r} (HTTP 404)"
            ) from exc
        except _REJECTED as exc:
            if response_format is not None or tools:
                raise FormatRejected(status_message(exc)) from exc
            raise LLMError(f"{self.base_url} rejected the request: {status_message(exc)}") from exc
        except openai.APIStatusError as exc:
            raise LLMError(f"{self.base_url} failed: {status_message(exc)}") from exc
        except openai.OpenAIError as exc:
            # e.g. a 200 whose body is not a chat completion at all.
            raise LLMUnavailable(
                f"{self.base_url} sent an unreadable answer: {redact(str(exc))}"
            ) from exc

    def _completion(
        self, response: Any, json_schema: dict[str, Any] | None, latency_ms: float,
        *, calls: bool = False,
    ) -> Completion:
        choices = getattr(response, "choices", None)
        first = choices[0] if isinstance(choices, list) and choices else None
        message = getattr(first, "message", None)
        content = getattr(message, "content", None)
        if message is None or not isinstance(content, str | None):
            # A 200 that is not a chat completion: a proxy's page, another API's answer.
            raise LLMUnavailable(f"{self.base_url} answered with no chat completion in it")
        text = (content or "").strip()
        tool_calls = tool_calls_of(message) if calls else ()
        # An empty answer to a tools round is returned, not raised: llama-cpp-python's
        # function calling sends one whenever the model chose to talk; the guard rejects
        # it and its retry asks again without tools (kuuki.respond.tools.loop).
        if not text and not calls:
            raise LLMBadOutput(f"{self.base_url} returned an empty answer")
        data = parse_json(text, json_schema) if json_schema is not None else None
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            model=getattr(response, "model", None) or self.name,
            usage=Usage(
                int(getattr(usage, "prompt_tokens", 0) or 0),
                int(getattr(usage, "completion_tokens", 0) or 0),
            ),
            data=data,
            latency_ms=latency_ms,
            finish_reason=str(getattr(first, "finish_reason", None) or "stop"),
            tool_calls=tool_calls,
        )


def _cleaned(exc: LLMError) -> LLMError:
    """``exc``, or a copy with its text redacted and no chain if any link of its chain
    holds a secret (kuuki.text.secrets).

    Servers echo request details in error bodies, which the SDK's exceptions (our causes)
    carry; a secret must not reach a log through a traceback either.
    """
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain:
        chain.append(link)
        link = link.__cause__ or link.__context__
    if all(redact(f"{e!r} {e}") == f"{e!r} {e}" for e in chain):
        return exc
    text = redact(str(exc))
    if isinstance(exc, LLMUnavailable):
        return type(exc)(text, retry_after=exc.retry_after)
    return type(exc)(text)
