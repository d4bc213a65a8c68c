"""A decision's headline in plain words, one style for every decision: what the bot did,
then why — "Replied: called by name", "Stayed silent: little reason to speak (score 16)",
"Reacted 🤔 instead of replying: called by name, but the reply was rejected twice (…)".

The stages write their reasons for the trace ("score below the low threshold", "judge
mode rules; score 22", "addressed by name → reply rejected twice (…): reacted 🤔"); the
same outcome reads alike here whichever stage decided it. A reason this module does not
know is shown as it was written, never dropped.
"""

from __future__ import annotations

import re

from kuuki.domain import ActionKind, Decision

ADDRESSED_WHY = {
    "mention": "it was @mentioned", "reply": "a reply to its message", "name": "called by name",
    "dm": "a direct message", "thread": "in its own thread",
    "context": "the message was for it (by context)",
}
_DID = {ActionKind.REPLY: "Replied", ActionKind.ACK: "Said a few words",
        ActionKind.NONE: "Stayed silent"}
_PLANNED = {"reply": "replying", "ack": "a few words", "proactive": "bringing a topic up",
            "failed": "replying"}
_LOCAL_ANSWER = {
    "judge mode rules": "judged by rules alone",
    "no LLM": "no LLM to ask",
    "circuit open (LLM failing)": "the LLM is failing, so judged by rules",
    "LLM budget for this channel spent": "the channel's LLM budget is spent, so judged by rules",
}
_SAME = {
    "score below the low threshold": "",
    "already answered by the bot": "it already answered in this conversation",
    "no open question to the room": "the question is no longer open to the room",
    "superseded": "a newer message of the burst was judged instead",
    "the conversation is ending": "the conversation is ending",
    "same conversation, nothing changed": "it spoke in this conversation and nothing changed",
    "judge answer unusable": "the LLM judge's answer was unusable, so silence to be safe",
    "conversation moved on": "the conversation moved on while it wrote",
    "asked to be quiet here": "asked to be quiet here",
    "rate limited: react only": "addressed many times in 10 minutes: an emoji only",
    "ping burst: answered when it ends": "a burst of pings, answered when it ends",
    "minimum interval since the last intervention": "it spoke up unasked a short while ago",
    "nothing proposed": "nothing to bring up",
    "already responded after the wake-up": "it already spoke after the channel woke up",
    "no stage chose to speak": "nothing called for it",
    "LLM judge": "the LLM judge said so",
    "not addressed": "not addressed",
}
_FALLBACK = re.compile(r"^(?P<what>.*?): (?:reacted (?P<emoji>\S+)|stayed silent)$")
_SCORE = re.compile(r"^score (?P<n>-?\d+)$")
_LOCAL = re.compile(r"^(?P<why>.+); score (?P<n>-?\d+)$")


def did(d: Decision) -> str:
    """'Replied', 'Reacted 👀', 'Stayed silent'…"""
    if d.action.kind is ActionKind.REACT:
        return f"Reacted {d.action.emoji}" if d.action.emoji else "Reacted"
    return _DID[d.action.kind]


def _score(value: float) -> str:
    return f"score {value:.0f}"


def why(reason: str, d: Decision, *, meant_to_speak: bool = False) -> str:
    """One stage's reason in plain words (the module doc); ``meant_to_speak``: the stage
    chose to speak, and a fallback made it silent."""
    r = reason.strip()
    silent = d.action.kind is ActionKind.NONE and not meant_to_speak
    if r.startswith("addressed by "):
        kind, _, rest = r.removeprefix("addressed by ").partition(": ")
        said = ADDRESSED_WHY.get(kind, f"addressed by {kind}")
        return f"{said}, but {rest}" if rest else said
    if r == "score below the low threshold" or (m := _SCORE.match(r)):
        if silent:
            return f"little reason to speak ({_score(d.score)})"
        return f"a member would speak here ({_score(d.score)})"
    if (m := _LOCAL.match(r)) and m["why"] in _LOCAL_ANSWER:
        how = _LOCAL_ANSWER[m["why"]]
        if silent:
            return f"not sure it should speak ({_score(d.score)}); {how}"
        return f"worth speaking up ({_score(d.score)}); {how}"
    if r.startswith("LLM: "):
        return f"the LLM judge: {r.removeprefix('LLM: ')}"
    if r.startswith("answered by "):
        return f"{r.removeprefix('answered by ')} already answered it"
    if r.startswith("sent twice: same as "):
        return f"the same as {r.removeprefix('sent twice: same as ')}, sent again"
    if r.startswith("superseded"):
        return _SAME["superseded"]
    return _SAME.get(r) or r


def headline(d: Decision) -> str:
    """The decision in one line: what it did, then why (the module doc)."""
    head, arrow, tail = d.reason.partition(" → ")
    reason = why(head, d, meant_to_speak=bool(arrow))
    if not arrow:
        return f"{did(d)}: {reason}"
    m = _FALLBACK.match(tail)
    if m is None:
        return f"{did(d)}: {reason} → {tail}"
    name, _, rest = m["what"].partition(" ")
    name = name.removesuffix("-retry")
    planned = _PLANNED.get(name, "speaking")
    was = "was " if rest.startswith(("rejected", "not written")) else ""
    subject = "reply" if name == "failed" else name
    return f"{did(d)} instead of {planned}: {reason}, but the {subject} {was}{rest}"
