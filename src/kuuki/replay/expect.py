"""Expectations in transcripts, and checking them against what the bot did.

A transcript may hold expectation lines (README "Testing a persona"):

    {"after": "m7", "expect": {"action": ["none"]}}
        the strongest action (reply > ack > react > none) the bot takes after message m7
        and before the next message of the file is one of the listed actions;
    {"from": "m3", "to": "m9", "expect": {"max_replies": 1}}
        from message m3 until the message after m9 the bot replies at most once
        (acks and reactions are not replies); without "to" the window runs to the end
        of the replay, virtual tail included.

Both keys may be used in either form. The replay records a `Played` (message markers
and decisions, in the order they happened); `check` returns one `Failure` per expectation
that does not hold, with the transcript's line number and the decisions in its window.
The scenario suite, `kuuki replay --check` and benchmarks share this one implementation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kuuki.domain import ActionKind, Decision
from kuuki.errors import TranscriptError
from kuuki.text.wording import plural

ACTIONS = tuple(k.value for k in ActionKind)
KEYS = ("action", "max_replies")


@dataclass(frozen=True, slots=True)
class Expectation:
    """One expectation line. The window opens at message `after` and closes at the first
    message that follows message `to` (`to` None: at the end of the replay)."""

    after: str
    expect: dict[str, Any]
    line: int
    to: str | None

    @property
    def where(self) -> str:
        if self.to == self.after:
            return f"after {self.after}"
        return f"from {self.after}" + (f" to {self.to}" if self.to else " to the end")


def parse_expectation(obj: dict[str, Any], path: str, line: int) -> Expectation:
    """Read an expectation line (`after` or `from`/`to`); TranscriptError names the line."""

    def bad(problem: str) -> TranscriptError:
        return TranscriptError(path, line, problem)

    expect = obj.get("expect")
    if not isinstance(expect, dict) or not expect:
        raise bad("field expect: expected an object such as {\"action\": [\"reply\"]}")
    unknown = sorted(set(expect) - set(KEYS))
    if unknown:
        raise bad(f"field expect: unknown key {unknown[0]!r}; expected {' or '.join(KEYS)}")
    ids = {k: obj.get(k) for k in ("after", "from", "to")}
    for key, value in ids.items():
        if value is not None and not isinstance(value, str):
            raise bad(f"field {key}: expected a message id (text)")
    if (ids["after"] is None) == (ids["from"] is None):
        raise bad("an expect line needs either 'after' or 'from' (a message id), not both")
    if ids["after"] is not None and ids["to"] is not None:
        raise bad("'to' goes with 'from', not with 'after'")
    clean: dict[str, Any] = {}
    if "action" in expect:
        actions = expect["action"]
        actions = [actions] if isinstance(actions, str) else actions
        if (
            not isinstance(actions, list)
            or not actions
            or not all(isinstance(a, str) and a in ACTIONS for a in actions)
        ):
            raise bad(f"field expect.action: expected a list of {', '.join(ACTIONS)}")
        clean["action"] = list(actions)
    if "max_replies" in expect:
        n = expect["max_replies"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise bad("field expect.max_replies: expected a whole number, 0 or more")
        clean["max_replies"] = n
    if ids["after"] is not None:
        return Expectation(ids["after"], clean, line, to=ids["after"])
    assert ids["from"] is not None
    return Expectation(ids["from"], clean, line, to=ids["to"])


def unknown_ids(
    expectations: Iterable[Expectation], message_ids: Sequence[str], path: str
) -> list[TranscriptError]:
    """One error per expectation that names no message of the file, or ends before it opens."""
    order = {mid: i for i, mid in enumerate(message_ids)}
    errors: list[TranscriptError] = []
    for exp in expectations:
        named = (("after", exp.after), ("to", exp.to))
        missing = [(k, m) for k, m in named if m is not None and m not in order]
        if missing:
            key, mid = missing[0]
            errors.append(TranscriptError(path, exp.line, f"{key}: no message {mid!r} in the file"))
        elif exp.to is not None and order[exp.to] < order[exp.after]:
            errors.append(
                TranscriptError(path, exp.line, f"to: message {exp.to} comes before {exp.after}")
            )
    return errors


@dataclass(slots=True)
class Played:
    """What happened during a replay, in order: message markers and the bot's decisions."""

    entries: list[tuple[str, Any]] = field(default_factory=list)

    def message(self, event_id: str) -> None:
        self.entries.append(("msg", event_id))

    def decision(self, d: Decision) -> None:
        self.entries.append(("decision", d))

    def window(self, exp: Expectation) -> list[Decision]:
        """The decisions between the opening message and the message after `to`."""
        found: list[Decision] = []
        inside = closing = False
        for kind, value in self.entries:
            if kind == "msg":
                if closing:
                    break
                if value == exp.after:
                    inside = True
                if inside and value == exp.to:
                    closing = True
            elif inside:
                found.append(value)
        return found


def strongest(decisions: Iterable[Decision], *, judged: bool = False) -> ActionKind:
    """The strongest action among `decisions` (reply > ack > react > none).

    ``judged``: what the judge decided rather than what was delivered (they differ when
    the output guard turned a rejected reply into a reaction)."""
    kinds = (d.judged if judged else d.action.kind for d in decisions)
    return max(kinds, key=lambda k: k.strength, default=ActionKind.NONE)


def describe_decision(d: Decision) -> str:
    kind, stage = d.action.kind.value, d.stage.value
    return f"{d.message_id}: {kind} ({stage}, score {d.score:.0f}) {d.reason}"


@dataclass(frozen=True, slots=True)
class Failure:
    """An expectation that does not hold, with what happened instead."""

    expectation: Expectation
    wanted: str
    got: str
    decisions: tuple[Decision, ...]

    @property
    def line(self) -> int:
        return self.expectation.line

    def describe(self, path: str = "") -> str:
        head = f"{path}:{self.line}" if path else f"line {self.line}"
        text = f"{head}: {self.expectation.where} expected {self.wanted}, got {self.got}"
        if not self.decisions:
            return text + " (no decision in that window)"
        return text + "".join(f"\n    {describe_decision(d)}" for d in self.decisions)


def check(
    expectations: Iterable[Expectation], timeline: Played, *, judged: bool = False
) -> list[Failure]:
    """The expectations that do not hold on `timeline`, in the order given.

    By default on what the bot did; ``judged`` checks what it decided (see `strongest`).
    """
    failures: list[Failure] = []
    for exp in expectations:
        decisions = timeline.window(exp)
        allowed = exp.expect.get("action")
        if allowed is not None:
            got = strongest(decisions, judged=judged)
            if got.value not in allowed:
                wanted = "action " + " or ".join(allowed)
                failures.append(Failure(exp, wanted, got.value, tuple(decisions)))
        limit = exp.expect.get("max_replies")
        if limit is not None:
            replies = [
                d for d in decisions
                if (d.judged if judged else d.action.kind) is ActionKind.REPLY
            ]
            if len(replies) > limit:
                failures.append(
                    Failure(exp, f"at most {plural(limit, 'reply')}",
                            plural(len(replies), "reply"), tuple(decisions))
                )
    return failures

