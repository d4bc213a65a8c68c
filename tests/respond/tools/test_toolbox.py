"""The toolbox's limits, on tools that misbehave: time-outs on the clock, huge results,
mass pings in results, a plugin that raises; and the registry's plugin path."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from kuuki.clock import VirtualClock
from kuuki.domain import Channel, User
from kuuki.errors import ConfigError
from kuuki.llm.base import ToolCall
from kuuki.respond.tools import registry
from kuuki.respond.tools.base import ToolContext
from kuuki.respond.tools.toolbox import Toolbox
from kuuki.settings.tools import ToolSettings

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


class Slow:
    name, description, parameters = "slow", "never answers", SCHEMA

    def __init__(self) -> None:
        self.called = asyncio.Event()

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        self.called.set()
        await asyncio.Event().wait()


class Loud:
    name, description, parameters = "loud", "a big answer with a mass ping", SCHEMA

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        return "@everyone look " + "x" * 5000


class Broken:
    name, description, parameters = "broken", "a plugin with a bug", SCHEMA

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        raise KeyError("oops")


class Indiscreet:
    name, description, parameters = "indiscreet", "a plugin whose error quotes its key", SCHEMA

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        raise RuntimeError("401 from https://api.example/x?api_key=k3y-0123456789 "
                           "(Authorization: Bearer tok-0123456789abcdef)")


def _ctx(clock: VirtualClock) -> ToolContext:
    return ToolContext(Channel("general", "general"), User("alice", "Alice"), clock.now())


async def test_a_tool_that_hangs_times_out_on_the_clock() -> None:
    clock = VirtualClock()
    slow = Slow()
    box = Toolbox([slow], clock=clock, timeout_s=5)
    task = asyncio.ensure_future(box.run(ToolCall("c1", "slow", "{}"), _ctx(clock)))
    await asyncio.wait_for(slow.called.wait(), 10)  # the tool is running, its time-out set
    await clock.advance(4.9)
    assert not task.done() and clock.pending() == 1, "4.9 s on the clock: still waiting"
    await clock.advance(0.1)
    outcome = await asyncio.wait_for(task, 10)  # due now: 10 s only stops a hang
    assert outcome.text == "error: slow did not answer in time"
    assert (outcome.record.outcome, outcome.record.result_chars) == ("timeout", 0)


async def test_a_result_is_capped_and_its_mass_ping_defused() -> None:
    clock = VirtualClock()
    box = Toolbox([Loud()], clock=clock, result_chars=200)
    outcome = await box.run(ToolCall("c1", "loud", ""), _ctx(clock))
    assert "@everyone" not in outcome.text and outcome.text.startswith("@\u200beveryone")
    assert outcome.text.endswith("[cut: 5015 characters in all]")
    assert outcome.record.detail == "cut from 5015 characters"
    assert outcome.record.result_chars == len(outcome.text) < 260


async def test_a_plugin_bug_is_a_note_not_a_crash() -> None:
    clock = VirtualClock()
    box = Toolbox([Broken()], clock=clock)
    outcome = await box.run(ToolCall("c1", "broken", "{}"), _ctx(clock))
    assert outcome.text == "error: broken failed"
    assert outcome.record.detail.startswith("KeyError")


async def test_a_plugin_error_reaches_the_trace_without_its_credentials() -> None:
    clock = VirtualClock()
    outcome = await Toolbox([Indiscreet()], clock=clock).run(
        ToolCall("c1", "indiscreet", "{}"), _ctx(clock))
    assert outcome.record.detail == ("RuntimeError: 401 from https://api.example/x?api_key=*** "
                                     "(Authorization: Bearer ***)")
    assert outcome.text == "error: indiscreet failed"


def test_plugins_register_like_built_ins_and_unknown_names_are_named() -> None:
    registry.register("loud", lambda host: Loud())
    host = registry.ToolHost(ToolSettings(), VirtualClock())
    assert registry.create("loud", host).name == "loud"
    assert {"recall", "now", "loud"} <= set(registry.names())
    with pytest.raises(ConfigError) as err:
        registry.create("wether", host)
    assert "tools.enabled" in str(err.value) and "'wether'" in str(err.value)


async def test_now_answers_in_the_users_zone_then_the_channels() -> None:
    clock = VirtualClock()
    t = ToolSettings(timezone="UTC", channel_timezones={"general": "Asia/Tokyo"},
                     user_timezones={"Bob": "America/New_York"})
    box = Toolbox([registry.create("now", registry.ToolHost(t, clock))], clock=clock)
    alice = await box.run(ToolCall("c", "now", "{}"), _ctx(clock))
    assert json.loads(alice.text)["timezone"] == "Asia/Tokyo"
    bob_ctx = ToolContext(Channel("general", "general"), User("b1", "Bob"), clock.now())
    bob = await box.run(ToolCall("c", "now", "{}"), bob_ctx)
    assert json.loads(bob.text)["timezone"] == "America/New_York"
    bad = await box.run(ToolCall("c", "now", '{"timezone": "Mars/Olympus"}'), _ctx(clock))
    assert bad.text == "error: unknown time zone 'Mars/Olympus'"


def test_the_app_offers_enabled_and_declared_tools() -> None:
    from dataclasses import replace

    from kuuki.app import build_toolbox
    from kuuki.settings import Settings
    from kuuki.settings.tools import http_tools

    declared = http_tools("tools.http", [{"name": "maintenance", "description": "d",
                                          "url": "http://127.0.0.1/m"}])
    tools = ToolSettings(enabled=("now", "maintenance"), http=declared)
    box = build_toolbox(replace(Settings(), tools=tools), VirtualClock())
    assert box.names == ["maintenance", "now"]
    with pytest.raises(ConfigError) as err:
        build_toolbox(replace(Settings(), tools=ToolSettings(enabled=("wether",))),
                      VirtualClock())
    assert err.value.key == "tools.enabled"


def test_a_plugin_package_registers_through_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real (if tiny) installed distribution: importlib.metadata finds its entry point.
    (tmp_path / "kuuki_dice.py").write_text(
        "class Dice:\n"
        "    name, description = 'dice', 'roll a die'\n"
        "    parameters = {'type': 'object', 'properties': {}}\n"
        "    async def run(self, args, ctx):\n"
        "        return 4\n"
        "def plug(register):\n"
        "    register('dice', lambda host: Dice())\n"
    )
    info = tmp_path / "kuuki_dice-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kuuki-dice\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[kuuki.tools]\ndice = kuuki_dice:plug\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry.REGISTRY, "plugins_loaded", False)
    monkeypatch.setattr(registry.REGISTRY, "factories", dict(registry.REGISTRY.factories))
    assert "dice" in registry.names()
    tool = registry.create("dice", registry.ToolHost(ToolSettings(), VirtualClock()))
    assert tool.description == "roll a die"
