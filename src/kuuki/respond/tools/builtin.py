"""The built-in tools: `recall` (the bot's own memory) and `now` (the time, where asked).

`recall` searches through `MemorySearch.recall`, which applies the prompts' privacy rule
(`kuuki.memory.privacy`): what it returns for a channel is exactly what a prompt for that
channel may show, so a private channel's memory never answers a question asked elsewhere.
`now` reads the clock (virtual in tests and replays) and the configured time zones.
"""

from __future__ import annotations

from typing import Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kuuki.clock import Clock
from kuuki.respond.tools.base import MemorySearch, ToolContext, ToolError
from kuuki.settings.tools import ToolSettings, zone_for

RECALL_LIMIT = 5


class RecallTool:
    name = "recall"
    description = (
        "Search what you remember from this chat: facts people told you, summaries of "
        "channels and threads, what you know about a person. Use it when asked about "
        "something that was said or decided before."
    )
    SCHEMA: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 200,
                      "description": "what to look for, in a few words"},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def __init__(self, memory: MemorySearch | None) -> None:
        self.memory = memory
        self.parameters = self.SCHEMA

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        if self.memory is None:
            raise ToolError("no memory is kept here")
        hits = self.memory.recall(ctx.channel, args["query"], now=ctx.now, limit=RECALL_LIMIT)
        if not hits:
            return "nothing remembered about that"
        return [{"from": f"{h.kind}, {h.source}", "text": h.text} for h in hits]


class NowTool:
    name = "now"
    description = (
        "The current date and time where the person asking is (or in a given IANA time "
        "zone, such as Asia/Tokyo)."
    )
    SCHEMA: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "timezone": {"type": "string", "maxLength": 64,
                         "description": "optional IANA time zone name"},
        },
        "additionalProperties": False,
    }

    def __init__(self, clock: Clock, settings: ToolSettings) -> None:
        self.parameters = self.SCHEMA
        self.clock = clock
        self.settings = settings

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        asked = str(args.get("timezone") or "").strip()
        if asked:
            try:
                zone: ZoneInfo | None = ZoneInfo(asked)
            except (ZoneInfoNotFoundError, ValueError):
                raise ToolError(f"unknown time zone {asked!r}") from None
        else:
            zone = zone_for(self.settings, ctx.channel, ctx.user)
        now = self.clock.now().astimezone(zone)
        return {
            "time": now.strftime("%H:%M"),
            "date": now.strftime("%Y-%m-%d"),
            "weekday": now.strftime("%A"),
            "timezone": str(zone) if zone is not None else (now.tzname() or "local"),
        }
