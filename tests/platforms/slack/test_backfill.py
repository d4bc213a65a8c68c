"""Start-up backfill through `run_slack`: history is recorded, never answered."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from kuuki.app import build_app
from kuuki.clock import RealClock
from kuuki.errors import ConfigError
from kuuki.platforms.slack import SlackOutbox, run_slack
from kuuki.run import RoutingOutbox
from kuuki.settings import Settings
from kuuki.testing.llm import ScriptedLLM
from kuuki.testing.slack_server import SlackServer


async def test_history_is_recorded_in_order_and_never_answered(tmp_path: Path) -> None:
    settings = Settings()
    server = SlackServer(bot_name=settings.persona.name)
    await server.start()
    alice = server.add_user("alice")
    general = server.add_channel("general")
    server.add_channel("elsewhere", member=False)  # not a member: not read
    old = [
        server.user_message(alice, general, "yesterday's news"),
        server.user_message(server.bot_user_id, general, "my earlier answer", bot_id=server.bot_id),
        server.user_message(alice, general, f"<@{server.bot_user_id}> are you there?"),
    ]
    llm = ScriptedLLM()
    outbox = SlackOutbox()
    app = await build_app(
        settings,
        clock=RealClock(),
        outbox=RoutingOutbox({"slack": outbox}),  # as `kuuki run` wires it
        llm=llm,
        judge_llm=llm,
        store=f"sqlite:///{tmp_path}/kuuki.sqlite3",
        embedder=None,
    )
    task = asyncio.create_task(
        run_slack(app, "xoxb-test", "xapp-test", outbox, base_url=server.api_url, backfill_limit=10)
    )
    try:
        await server.wait_for(lambda: server.connected)
        await app.engine.idle()
        state = app.engine.state(general)
        assert state is not None
        recent = state.buffer.recent()
        assert [m.id for m in recent] == [f"{general}:{m['ts']}" for m in old]
        assert recent[1].user.is_bot and recent[1].id in state.bot_message_ids
        assert recent[2].mentions == (server.bot_user_id,)
        assert llm.history == []  # the old mention was recorded, not judged
        assert outbox.suppressed_actions == 0
        assert not [c for c in server.calls if c.method in ("chat.postMessage", "reactions.add")]
        history_calls = [c for c in server.calls if c.method == "conversations.history"]
        assert [c.args["channel"] for c in history_calls] == [general]
        assert history_calls[0].args["limit"] == "10"
        # a live redelivery of a backfilled message is the same event: handled once
        handled = app.engine.handled
        await server.emit(server.message_event(general, old[0]))
        await server.wait_acked()
        await app.engine.idle()
        assert app.engine.handled == handled
        # and what is said now is answered as usual
        llm.enqueue("Yes, I'm here.")
        msg = server.user_message(alice, general, f"<@{server.bot_user_id}> hello again")
        await server.emit(server.message_event(general, msg))
        await server.wait_for(lambda: len(server.bot_messages) == 2)
        assert server.bot_messages[-1]["text"] == "Yes, I'm here."
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await app.close()
        await server.close()


@pytest.mark.parametrize(
    ("bot_token", "app_token", "key"),
    [
        ("xoxb-wrong", "xapp-ok", "SLACK_BOT_TOKEN"),
        ("xoxb-ok", "xoxb-not-an-app-token", "SLACK_APP_TOKEN"),
    ],
)
async def test_refused_tokens_are_config_errors(
    tmp_path: Path, bot_token: str, app_token: str, key: str
) -> None:
    server = SlackServer()
    server.refuse_token("xoxb-wrong")
    await server.start()
    outbox = SlackOutbox()
    app = await build_app(
        Settings(),
        clock=RealClock(),
        outbox=outbox,
        llm=None,
        judge_llm=None,
        store=f"sqlite:///{tmp_path}/kuuki.sqlite3",
        embedder=None,
    )
    try:
        with pytest.raises(ConfigError) as info:
            await run_slack(app, bot_token, app_token, base_url=server.api_url)
        assert info.value.key == key
        assert not server.connections_opened
    finally:
        await app.close()
        await server.close()
