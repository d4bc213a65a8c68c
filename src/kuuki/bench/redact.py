"""`kuuki bench redact`: what the one redaction step (kuuki.text.secrets) costs on the
texts it cleans: error bodies of about 2 kB, with no secret in them, with a key kuuki does
not know, with a configured one as written and JSON-escaped, and a traceback, each with
the nine secrets of `kuuki bench secrets` registered. Redaction runs where foreign text
enters (an error, a tool's answer, a log record), never per chat message; this is its
price there. The reference loop (20 million Python additions) puts the figure beside the
machine's speed at the time.
"""

from __future__ import annotations

import json
import time
import timeit
from functools import partial
from typing import Any, TextIO

from kuuki.bench.secrets import SECRETS
from kuuki.text.secrets import Secrets

_SIZE = 2048


def _error_body(said: str) -> str:
    """An OpenAI-style error body of about 2 kB that says ``said`` first."""
    detail = ("The model `gpt-x` does not exist or you do not have access to it.\n"
              "See https://platform.openai.com/docs/models?page=2&sort=name for the list.\n")
    body = json.dumps({"error": {"message": said + detail * 30, "type": "invalid_request_error",
                                 "param": None, "code": "model_not_found"}})
    return body[:_SIZE - 3] + '"}}'


def _traceback() -> str:
    frame = ('  File "/usr/lib/python3/site-packages/httpx/_transports/default.py", line 69, '
             'in map_httpcore_exceptions\n    yield\n')
    return ("Traceback (most recent call last):\n" + frame * 20)[:_SIZE - 60] + (
        "\nhttpx.ConnectError: [Errno 111] Connection refused")


def texts() -> dict[str, str]:
    key = SECRETS["llm api key"]
    return {
        "error body, no secret": _error_body(""),
        "error body, an unknown key": _error_body(
            "Incorrect API key provided: sk-live-Zyx987Wvu654Tsr321Qpo098. "),
        "error body, the configured key": _error_body(f"Incorrect API key provided: {key}. "),
        "error body, the key JSON-escaped": _error_body(
            "Incorrect API key provided: " + key.replace("-", "\\u002d") + ". "),
        "traceback": _traceback(),
    }


def _reference_loop() -> float:
    start = time.perf_counter()
    total = 0
    for i in range(20_000_000):
        total += i
    return time.perf_counter() - start


def bench_redact(number: int = 2000, repeat: int = 7) -> dict[str, Any]:
    """Microseconds per `redact` call on each text (the best of ``repeat`` runs of
    ``number`` calls), and the reference loop's seconds."""
    secrets = Secrets(SECRETS.values())
    micros = {}
    for name, text in texts().items():
        secrets.redact(text)  # the first call compiles what it needs
        best = min(timeit.repeat(partial(secrets.redact, text), number=number, repeat=repeat))
        micros[name] = round(best / number * 1e6, 1)
    return {"benchmark": "redact", "chars": {n: len(t) for n, t in texts().items()},
            "secrets": len(secrets.values()), "us_per_call": micros,
            "reference_loop_s": round(_reference_loop(), 2)}


def print_report(report: dict[str, Any], out: TextIO, *, as_json: bool = False) -> None:
    if as_json:
        print(json.dumps(report), file=out)
        return
    width = max(len(n) for n in report["us_per_call"])
    for name, micros in report["us_per_call"].items():
        print(f"{name:<{width}}  {report['chars'][name]:>5} chars  {micros:>8.1f} µs", file=out)
    print(f"{report['secrets']} secrets registered; reference loop (20M additions): "
          f"{report['reference_loop_s']} s", file=out)
