"""What `kuuki doctor` found: one `Result` per check, printed one line each (✓/✗, or
ok/FAIL where the terminal cannot show them), or as one JSON object."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TextIO

# The model servers people run on their own machine, on their default ports: `kuuki
# doctor` asks each for `/v1/models` when no model is configured (docs/decisions.md,
# "Issue 27: kuuki doctor").
LOCAL_SERVERS: tuple[tuple[int, str], ...] = (
    (11434, "Ollama"),
    (8080, "llama.cpp"),
    (8000, "vLLM"),
    (1234, "LM Studio"),
)


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Where the checks go: the real services by default; tests point them at local ones
    (the protocol servers in kuuki.testing, free ports for the loopback probe)."""

    discord_api: str = "https://discord.com/api/v10"
    slack_api: str = "https://slack.com/api/"
    local_servers: tuple[tuple[int, str], ...] = LOCAL_SERVERS
    probe_timeout_s: float = 1.0
    http_timeout_s: float = 15.0


@dataclass(frozen=True, slots=True)
class Result:
    """One check: ``ok`` True (passed), False (a problem: ``text`` says what and how to fix
    it) or None (a note that passes or fails nothing); ``more`` are lines printed under it."""

    name: str
    ok: bool | None
    text: str
    more: tuple[str, ...] = ()


def passed(name: str, text: str, *more: str) -> Result:
    return Result(name, True, text, more)


def failed(name: str, problem: str, fix: str = "") -> Result:
    return Result(name, False, f"{problem} — {fix}" if fix else problem)


def note(name: str, text: str, *more: str) -> Result:
    return Result(name, None, text, more)


def exit_code(results: list[Result]) -> int:
    return 1 if any(r.ok is False for r in results) else 0


def can_write_unicode(out: TextIO) -> bool:
    encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return encoding in {"utf8", "utf16", "utf32"}


_PLAIN = str.maketrans({"→": "->", "…": "...", "—": "--", "✓": "ok", "✗": "x"})


def _plain(text: str) -> str:
    """``text`` for a terminal that cannot show more than ASCII: arrows and dashes spelt
    out, anything else (a persona's name, say) as ``?`` rather than a crash."""
    return text.translate(_PLAIN).encode("ascii", "replace").decode("ascii")


def render(results: list[Result], out: TextIO, *, unicode: bool) -> None:
    marks = {True: "✓", False: "✗", None: "·"} if unicode else {
        True: "ok  ", False: "FAIL", None: "--  "}
    shown = (lambda t: t) if unicode else _plain
    for r in results:
        print(shown(f"{marks[r.ok]} {r.name}: {r.text}"), file=out)
        for line in r.more:
            print(shown(f"      {line}"), file=out)
    bad = sum(r.ok is False for r in results)
    summary = "all checks passed" if not bad else f"{bad} problem{'s' if bad > 1 else ''} found"
    print(summary, file=out, flush=True)


def render_json(results: list[Result], out: TextIO) -> None:
    doc = {"ok": exit_code(results) == 0, "checks": [asdict(r) for r in results]}
    print(json.dumps(doc, ensure_ascii=False, indent=2), file=out, flush=True)
