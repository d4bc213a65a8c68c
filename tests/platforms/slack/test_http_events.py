"""Slack's HTTP Events API mode (issue 14): signed requests sent with httpx to the
running endpoint, as Slack sends them; the Web API is the local Slack server."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from kuuki.app import App, build_app
from kuuki.clock import RealClock
from kuuki.domain import Decision
from kuuki.platforms.slack import SlackOutbox, run_slack_http
from kuuki.platforms.slack.mapping import message_id
from kuuki.settings import Settings
from kuuki.testing.faults import FaultyStore
from kuuki.testing.llm import ScriptedLLM
from kuuki.testing.slack_server import SlackServer

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-kuuki-test"


def signed(body: bytes, *, secret: str = SECRET, retry: int | None = None) -> dict[str, str]:
    """Slack's v0 request signature: HMAC-SHA256 of "v0:<timestamp>:<body>"."""
    stamp = str(int(time.time()))
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body,
                      hashlib.sha256).hexdigest()
    headers = {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}",
               "Content-Type": "application/json"}
    if retry is not None:
        headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
    return headers


@dataclass
class Endpoint:
    server: SlackServer
    app: App
    llm: ScriptedLLM
    http: httpx.AsyncClient
    url: str
    channel: str
    alice: str
    decisions: list[Decision]
    db: Path
    store: FaultyStore  # the app's: its inbox commits fail on command

    def inbox(self, ts: str) -> list[str]:
        """The event ids the store's inbox holds for message `ts`, read from the database
        file as another process would: what is committed is durable."""
        with contextlib.closing(sqlite3.connect(self.db)) as conn:
            rows = conn.execute("SELECT event_id FROM processed_events WHERE event_id = ?",
                                (f"slack:{self.channel}:{ts}",)).fetchall()
        return [r[0] for r in rows]

    async def post(self, payload: dict[str, Any], **sign: Any) -> httpx.Response:
        body = json.dumps(payload).encode()
        return await self.http.post(self.url, content=body, headers=signed(body, **sign))

    def mention(self, text: str) -> dict[str, Any]:
        msg = self.server.user_message(self.alice, self.channel,
                                       f"<@{self.server.bot_user_id}> {text}")
        return self.server.event_envelope(self.server.message_event(self.channel, msg)).payload


@pytest.fixture
async def endpoint(tmp_path: Path) -> AsyncIterator[Endpoint]:
    server = SlackServer(bot_name="Kuu")
    await server.start()
    channel = server.add_channel("general")
    alice = server.add_user("alice")
    llm = ScriptedLLM()
    outbox = SlackOutbox()
    db = tmp_path / "slack.sqlite3"
    store = await FaultyStore.open(f"sqlite:///{db}")
    app = await build_app(Settings(), clock=RealClock(), outbox=outbox, llm=llm, judge_llm=llm,
                          store=store, embedder=None)
    decisions: list[Decision] = []
    app.engine.on_decision(decisions.append)
    bound: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(run_slack_http(
        app, BOT_TOKEN, SECRET, outbox, host="127.0.0.1", port=0,
        base_url=server.api_url, ready=bound.set_result,
    ))
    done, _ = await asyncio.wait({task, bound}, timeout=15,
                                 return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        task.result()
    port = bound.result()
    async with httpx.AsyncClient(timeout=15) as http:
        try:
            yield Endpoint(server, app, llm, http, f"http://127.0.0.1:{port}/slack/events",
                           channel, alice, decisions, db, store)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await app.close()
            await server.close()


async def test_url_verification_is_answered_with_the_challenge(endpoint: Endpoint) -> None:
    resp = await endpoint.post({"type": "url_verification", "token": "x",
                                "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
    assert resp.status_code == 200
    assert "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" in resp.text


async def test_a_signed_event_is_stored_before_200_and_answered(endpoint: Endpoint) -> None:
    endpoint.llm.enqueue("hello alice")
    payload = endpoint.mention("are you there?")
    resp = await endpoint.post(payload)
    assert resp.status_code == 200
    ts = payload["event"]["ts"]
    assert len(endpoint.inbox(ts)) == 1, "durable in the inbox when Slack heard 200"
    await endpoint.server.wait_for(lambda: len(endpoint.server.bot_messages) == 1)
    assert endpoint.server.bot_messages[0]["text"] == "hello alice"
    await endpoint.app.engine.idle()
    [stored] = await endpoint.app.store.history.messages_by_ids([message_id(endpoint.channel, ts)])
    assert stored.text.endswith("are you there?")


async def test_a_bad_signature_gets_401_and_nothing_is_stored(endpoint: Endpoint) -> None:
    payload = endpoint.mention("forged")
    resp = await endpoint.post(payload, secret="not-the-secret")
    assert resp.status_code == 401
    body = json.dumps(payload).encode()
    unsigned = await endpoint.http.post(endpoint.url, content=body,
                                        headers={"Content-Type": "application/json"})
    assert unsigned.status_code == 401
    await endpoint.app.engine.idle()
    mid = message_id(endpoint.channel, payload["event"]["ts"])
    assert endpoint.inbox(payload["event"]["ts"]) == []
    assert await endpoint.app.store.history.messages_by_ids([mid]) == []
    assert await endpoint.app.store.history.last_message(endpoint.channel) is None
    assert endpoint.decisions == [] and endpoint.server.bot_messages == []


async def test_a_retry_of_the_same_event_is_handled_once(endpoint: Endpoint) -> None:
    endpoint.llm.enqueue("only once", "a second answer")
    payload = endpoint.mention("hello?")
    first, again, third = (await endpoint.post(payload),
                           await endpoint.post(payload, retry=1),
                           await endpoint.post(payload, retry=2))
    assert [r.status_code for r in (first, again, third)] == [200, 200, 200]
    await endpoint.server.wait_for(lambda: len(endpoint.server.bot_messages) >= 1)
    await endpoint.app.engine.idle()
    assert [m["text"] for m in endpoint.server.bot_messages] == ["only once"]
    mid = message_id(endpoint.channel, payload["event"]["ts"])
    assert len(endpoint.inbox(payload["event"]["ts"])) == 1
    assert [d.message_id for d in endpoint.decisions] == [mid]


async def test_a_store_outage_is_not_acknowledged_so_slack_retries(endpoint: Endpoint) -> None:
    endpoint.llm.enqueue("answered after the outage")
    endpoint.app.engine.intake.patience_s = 0.1
    # the channel is known to the store (one whose first message the outage refused:
    # tests/platforms/slack/test_slack_outage.py)
    said = endpoint.server.user_message(endpoint.alice, endpoint.channel, "morning all")
    before = endpoint.server.event_envelope(
        endpoint.server.message_event(endpoint.channel, said)).payload
    assert (await endpoint.post(before)).status_code == 200
    await endpoint.app.engine.idle()
    endpoint.decisions.clear()
    payload = endpoint.mention("during the outage")
    endpoint.store.admits.fail()  # the database, unreachable
    refused = await endpoint.post(payload)
    endpoint.store.admits.heal()
    assert refused.status_code >= 500 and endpoint.store.admits.failed >= 1
    ts = payload["event"]["ts"]
    assert endpoint.inbox(ts) == [] and endpoint.decisions == []
    # Once the store answers, the channel is read back from its history (the retrier)
    # and Slack's later retry of the same event is acknowledged, handled once.
    await endpoint.store.admits.wait(passed=endpoint.store.admits.passed + 1)
    assert len(endpoint.inbox(ts)) == 1  # what the retrier took in: the refused message
    retried = await endpoint.post(payload, retry=1)
    assert retried.status_code == 200
    assert len(endpoint.inbox(ts)) == 1
    await endpoint.server.wait_for(lambda: len(endpoint.server.bot_messages) >= 1)
    await endpoint.app.engine.idle()
    assert [d.message_id for d in endpoint.decisions] == [message_id(endpoint.channel, ts)]
    assert [m["text"] for m in endpoint.server.bot_messages] == ["answered after the outage"]
