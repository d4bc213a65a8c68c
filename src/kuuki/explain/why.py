"""`kuuki why [MESSAGE_ID]`: a stored decision, written for the person who asks.

It shows the message (who, where, when, what), every decision about it (a later re-check,
such as an unanswered question, adds one), the text the bot posted, and the trace. When
nothing is found it says which store it looked in and how a replay or the playground can
keep theirs, since both use a temporary store by default.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, TextIO

from kuuki.domain import GuardRecord, Message
from kuuki.errors import KuukiError
from kuuki.explain.lines import feature_line, guard_line, tool_line, tool_record
from kuuki.explain.models import model_lines
from kuuki.settings import Settings
from kuuki.settings.urls import display_url, normalise_url, sqlite_file
from kuuki.text.wording import echoed

if TYPE_CHECKING:
    from kuuki.store import Store


def trace_lines(trace: dict[str, Any], bot_names: Collection[str] = ()) -> list[str]:
    """A stored trace as indented lines: rule points, the learned models (the features
    that weighed most one level in), features, steps, LLM calls, errors. ``bot_names``
    picks the bot among the addressee's candidates."""
    lines: list[str] = []
    for c in trace.get("contributions", []):
        detail = f"  ({c['detail']})" if c.get("detail") else ""
        lines.append(f"  {c['points']:+6.0f}  {c['rule']}{detail}")
    for summary, *because in model_lines(trace.get("features", {}), bot_names):
        lines.append(f"  · {summary}")
        lines.extend(f"      {line}" for line in because)
    for k, v in trace.get("features", {}).items():
        line = feature_line(k, v)
        if line is not None:
            lines.append(f"  · {line}")
    for s in trace.get("steps", []):
        lines.append(f"  → {s}")
    decided = [r for r in trace.get("stages", []) if r.get("outcome") != "pass"]
    if trace.get("stages"):
        ran = " → ".join(r["name"] for r in trace["stages"])
        done = {"decide": "decided", "defer": "deferred"}
        end = (
            f"; {decided[-1]['name']} {done.get(decided[-1]['outcome'], decided[-1]['outcome'])}"
            if decided else ""
        )
        lines.append(f"  stages: {ran}{end}")
    for g in trace.get("guard", []):
        record = GuardRecord(g["subject"], g["ok"], g.get("check", ""), g.get("reason", ""),
                             g.get("text", ""), tuple(g.get("repairs", ())))
        lines.append(f"  guard: {guard_line(record)}")
    for call in trace.get("llm_calls", []):
        lines.append(
            f"  llm {call['purpose']}: {call['model']} {call['outcome']} "
            f"{call['prompt_tokens']}+{call['completion_tokens']} tokens "
            f"{call['latency_ms']:.0f} ms"
        )
    for t in trace.get("tool_calls", []):
        lines.append(f"  {tool_line(tool_record(t))}")
    for e in trace.get("errors", []):
        lines.append(f"  ! {e}")
    return lines


def decision_headline(row: dict[str, Any]) -> str:
    return (
        f"{row.get('action')} (stage {row.get('stage')}, score {row.get('score')})"
        f" — {row.get('reason')}"
    )


def format_decision_row(row: dict[str, Any], bot_names: Collection[str] = ()) -> str:
    """One decision row in a few lines: what was decided, then the trace."""
    head = f"message {row.get('message_id')} in #{row.get('channel_id')}: "
    trace = trace_lines(row.get("trace") or {}, bot_names)
    return "\n".join([head + decision_headline(row), *trace])


def format_why(
    message: Message | None, rows: list[dict[str, Any]], bot_names: Collection[str] = ()
) -> str:
    """The message, each decision about it with the posted text, and the traces."""
    first = rows[0]
    if message is not None:
        when = message.ts.strftime("%Y-%m-%d %H:%M:%S %Z").strip()
        lines = [
            f"message {message.id} in #{first['channel_id']}, {message.user.name} at {when}:",
            f"  {message.text!r}" if message.text else "  (no text: deleted or empty)",
        ]
    else:
        lines = [f"message {first['message_id']} in #{first['channel_id']} (text not stored)"]
    for row in rows:
        at = row["decided_at"].strftime("%H:%M:%S")
        lines.append("")
        lines.append(f"decision at {at}: {decision_headline(row)}")
        if row.get("emoji"):
            lines.append(f"  reacted with {row['emoji']}")
        if row.get("action") in ("reply", "ack"):
            text = row.get("action_text")
            lines.append(f"  posted: {text!r}" if text else "  posted no text (generation off)")
        lines.extend(trace_lines(row.get("trace") or {}, bot_names))
    return "\n".join(lines)


def where_looked(settings: Settings, store_url: str | None) -> str:
    """The store `kuuki why` read, as a person knows it: a file path or a masked URL."""
    url = store_url if store_url is not None else (settings.store_url or None)
    file = sqlite_file(url)
    shown = str(file) if file is not None else display_url(normalise_url(url))
    if store_url is not None:
        return f"{shown} (--store)"
    key, source = settings.key_of("store_url")
    if not settings.store_url:
        return f"the default store {shown} (set {key} or store.url to use another)"
    return f"{shown} ({key} {source})"


def not_found(
    settings: Settings, message_id: str | None, store_url: str | None, *, empty: bool = False,
    channel: str | None = None,
) -> KuukiError:
    what = (f"no decision stored for message {echoed(message_id)}" if message_id else
            f"no decision stored for channel {echoed(channel)!r}" if channel else
            "no decision stored")
    where = where_looked(settings, store_url)
    if empty:
        what, where = "no store", where + ": nothing was ever recorded there"
    return KuukiError(
        f"{what} {'at' if empty else 'in'} {where}. `kuuki replay` and the playground "
        "keep their decisions in a "
        "temporary store unless started with --store PATH; then ask "
        "`kuuki why MESSAGE_ID --store PATH`"
    )


async def open_to_read(
    settings: Settings, store_url: str | None, message_id: str | None = None
) -> Store:
    """The store a reading command names (``--store``, else the configured one), opened
    only to read (`Store.open_to_read`): nothing is created, migrated or changed. No file
    there is the error `not_found` words; any other store this kuuki cannot read is
    refused with the line that says why."""
    from kuuki.store import Store

    url = store_url if store_url is not None else (settings.store_url or None)
    file = sqlite_file(url)
    if file is not None and not file.exists():
        raise not_found(settings, message_id, store_url, empty=True)
    return await Store.open_to_read(url)


async def run_why(
    settings: Settings,
    message_id: str | None,
    channel: str | None,
    as_json: bool,
    out: TextIO,
    store_url: str | None = None,
) -> int:
    """Print the decisions about `message_id` (default: the latest decision)."""
    store = await open_to_read(settings, store_url, message_id)
    try:
        if message_id is None:
            latest = await store.browse.latest_decision(channel)
            message_id = latest["message_id"] if latest else None
        rows = await store.browse.decisions_for(message_id) if message_id else []
        message = await store.messages.get_message(message_id) if message_id else None
    finally:
        await store.close()
    if not rows:
        raise not_found(settings, message_id, store_url, channel=channel)
    if as_json:
        out.write(json.dumps(rows, ensure_ascii=False, default=str, indent=2) + "\n")
    else:
        persona = settings.persona
        out.write(format_why(message, rows, (persona.name, *persona.aliases)) + "\n")
    return 0
