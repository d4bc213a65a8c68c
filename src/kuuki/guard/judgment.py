"""The judge's structured answer, checked for meaning and not only for shape.

A schema says ``should_respond`` is a boolean and ``reason`` a string; it cannot say that
``{"should_respond": true, "response_type": "none", "reason": "why"}`` is the prompt's
format example handed back. Such an answer is a failed answer: the judge falls back to
the seeds' fail-safe (do not respond) and the trace says why.
"""

from __future__ import annotations

from typing import Any

from kuuki.guard.scaffold import Scaffold, normalized, tokens

_EMPTY_REASONS = frozenset(
    {"why", "reason", "because", "none", "n a", "na", "null", "no reason", "理 由", "判 断 理 由",
     "な し", "特 に な し"}
)


def judgment_problem(data: dict[str, Any], scaffold: Scaffold) -> str | None:
    """Why a schema-valid judge answer means nothing, or None when it can be acted on."""
    should = bool(data.get("should_respond"))
    kind = str(data.get("response_type", ""))
    if should and kind == "none":
        return "contradiction: should_respond is true but response_type is none"
    if not should and kind not in ("none", ""):
        return f"contradiction: should_respond is false but response_type is {kind}"
    reason = str(data.get("reason", "")).strip()
    norm = normalized(reason)
    if not norm:
        return "the reason is empty"
    if norm in _EMPTY_REASONS:
        return f"the reason says nothing (“{reason[:40]}”)"
    placeholder = scaffold.placeholder(reason)
    if placeholder is not None:
        return f"the reason is {placeholder}"
    if len(tokens(reason)) < 2:
        return f"the reason says nothing (“{reason[:40]}”)"
    return None
