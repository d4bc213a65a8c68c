"""Payload mapping with the real Web API client against the local server (no socket)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from kuuki.domain import EventKind, Visibility
from kuuki.platforms.slack.mapping import MAX_TEXT, MalformedPayload, Mapper
from kuuki.platforms.slack.names import LOOKUPS_PER_MESSAGE, Directory
from kuuki.testing.slack_server import SlackServer


@pytest.fixture
async def server() -> AsyncIterator[SlackServer]:
    s = SlackServer(bot_name="Kuu")
    await s.start()
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
async def mapper(server: SlackServer) -> AsyncIterator[Mapper]:
    async with aiohttp.ClientSession() as session:
        client = AsyncWebClient(token="xoxb-t", base_url=server.api_url, session=session)
        directory = Directory(
            client, team_id=server.team_id, bot_user_id=server.bot_user_id, bot_name="Kuu"
        )
        yield Mapper(directory, bot_id=server.bot_id)


def _lookups(server: SlackServer, method: str) -> int:
    return sum(1 for c in server.calls if c.method == method)


async def test_names_are_looked_up_once(server: SlackServer, mapper: Mapper) -> None:
    alice, bob = server.add_user("alice"), server.add_user("bob")
    general = server.add_channel("general")
    for i in range(3):
        msg = server.user_message(alice, general, f"<@{bob}> <@{server.bot_user_id}> #{i}")
        event = await mapper.event(server.message_event(general, msg))
        assert event is not None and event.message is not None
        assert event.message.text == f"@bob @Kuu #{i}"
        assert event.message.mentions == (bob, server.bot_user_id)
    assert _lookups(server, "users.info") == 2  # alice and bob, once each; never the bot
    assert _lookups(server, "conversations.info") == 1


async def test_dm_and_unknown_channels(server: SlackServer, mapper: Mapper) -> None:
    alice = server.add_user("alice")
    dm = server.add_channel("", im_user=alice)
    ch = await mapper.directory.channel(dm)
    assert (ch.name, ch.visibility) == ("dm:alice", Visibility.DM)
    unknown = await mapper.directory.channel("C999")
    assert unknown.visibility is Visibility.PRIVATE  # unknown is treated cautiously
    assert (await mapper.directory.channel("D999")).visibility is Visibility.DM
    ghost = await mapper.directory.user("U404", hint="ghost")
    assert ghost.name == "ghost"


async def test_unfurls_are_not_edits_and_own_posts_are_skipped(
    server: SlackServer, mapper: Mapper
) -> None:
    alice = server.add_user("alice")
    general = server.add_channel("general")
    msg = server.user_message(alice, general, "see https://example.com")
    preview = {"service_name": "example.com", "title": "Example", "text": "An example page",
               "from_url": "https://example.com", "original_url": "https://example.com"}
    unfurled = {**msg, "attachments": [preview]}
    assert await mapper.event(server.changed_event(general, msg, unfurled)) is None
    edited = {**msg, "text": "see <https://example.com|the site>", "edited": {"ts": "1.5"}}
    event = await mapper.event(server.changed_event(general, msg, edited))
    assert event is not None and event.kind is EventKind.EDITED
    target = f"{general}:{msg['ts']}"  # kuuki's id: a ts is unique only within its channel
    assert (event.target_id, event.text) == (target, "see the site (https://example.com)")
    assert event.event_id == f"slack:{general}:{msg['ts']}:edit:1.5"
    own = server.user_message(server.bot_user_id, general, "mine", bot_id=server.bot_id)
    assert await mapper.event(server.message_event(general, own)) is None
    kept = await mapper.event(server.message_event(general, own), include_own=True)
    assert kept is not None and kept.message is not None and kept.message.user.is_bot


@pytest.mark.parametrize(
    "event",
    [
        {
            "type": "message",
            "subtype": "bot_message",
            "bot_id": "B9",
            "username": "ci",
            "text": "build green",
            "ts": "1700000000.000100",
            "channel": "CX",
        },
        {
            "type": "message",
            "subtype": "file_share",
            "user": "UX",
            "text": "",
            "files": [{"name": "plan.pdf"}],
            "ts": "1700000000.000200",
            "channel": "CX",
        },
    ],
)
async def test_bot_and_file_messages(mapper: Mapper, event: dict[str, Any]) -> None:
    mapped = await mapper.event(event)
    assert mapped is not None and mapped.message is not None
    if event["subtype"] == "bot_message":
        assert mapped.message.user.is_bot and mapped.message.user.name == "ci"
    else:
        assert mapped.message.text.strip() == "[file: plan.pdf]"


async def test_joins_are_ignored_and_garbage_is_refused(mapper: Mapper) -> None:
    join = {"type": "message", "subtype": "channel_join", "channel": "C1", "ts": "1.0"}
    assert await mapper.event(join) is None
    with pytest.raises(MalformedPayload, match="deleted_ts"):
        await mapper.event({"type": "message", "subtype": "message_deleted", "channel": "C1"})
    with pytest.raises(MalformedPayload, match="unknown event type"):
        await mapper.event({"type": "team_join"})


async def _text(server: SlackServer, mapper: Mapper, text: str) -> tuple[str, tuple[str, ...]]:
    """What the bot reads of ``text`` said by alice in #general, and whom it mentions."""
    users = {u["name"]: uid for uid, u in server.ws.users.items()}
    alice = users.get("alice") or server.add_user("alice")
    general = next((c for c, raw in server.ws.channels.items() if raw.get("name") == "general"),
                   None) or server.add_channel("general")
    msg = server.user_message(alice, general, text)
    event = await mapper.event(server.message_event(general, msg))
    assert event is not None and event.message is not None
    return event.message.text, event.message.mentions


async def test_dates_read_as_their_fallback_else_as_a_utc_time(
    server: SlackServer, mapper: Mapper
) -> None:
    text = ("<!date^1392734382^{date_short}|Feb 18, 2014 PST> / "
            "<!date^1392734382^{date_num} {time_secs}^https://example.com> / <!date^soon>")
    assert await _text(server, mapper, text) == (
        "Feb 18, 2014 PST / 2014-02-18 14:39 UTC / a date", ())


async def test_user_groups_read_as_label_or_handle_and_never_as_a_mention(
    server: SlackServer, mapper: Mapper
) -> None:
    oncall = server.add_usergroup("oncall")
    text = (f"<!subteam^{oncall}> <!subteam^S0LABEL|@happy-peeps> <!subteam^S0GONE> "
            "<!here> <!channel> <!everyone>")
    for _ in range(2):
        assert await _text(server, mapper, text) == (
            "@oncall @happy-peeps @group @here @channel @everyone", ())
    assert _lookups(server, "usergroups.list") == 1  # asked once, for every message after


async def test_user_groups_that_cannot_be_listed_read_as_group_and_are_not_asked_again(
    server: SlackServer, mapper: Mapper, caplog: pytest.LogCaptureFixture
) -> None:
    server.add_usergroup("oncall", gid="S0ONCALL")
    server.failing["usergroups.list"] = "missing_scope"
    for _ in range(3):
        assert await _text(server, mapper, "<!subteam^S0ONCALL> ping") == ("@group ping", ())
    assert _lookups(server, "usergroups.list") == 1
    warned = [r for r in caplog.records if "usergroups.list" in r.getMessage()]
    assert len(warned) == 1 and "missing_scope" in warned[0].getMessage()


def _share(author: str, text: str) -> dict[str, Any]:
    return {"is_share": True, "is_msg_unfurl": True, "author_id": author, "text": text,
            "author_name": "hint", "from_url": "https://x.slack.com/archives/C1/p1"}


async def test_a_hostile_share_costs_no_more_than_a_long_message(
    server: SlackServer, mapper: Mapper
) -> None:
    alice = server.add_user("alice")
    general = server.add_channel("general")
    msg = server.user_message(alice, general, "look")
    strangers = [" ".join(f"<@U8{i:03d}{j:02d}>" for j in range(20)) for i in range(50)]
    msg["attachments"] = [_share(f"U9{i:05d}", f"{strangers[i]} " + "x" * 30_000)
                          for i in range(50)]
    event = await mapper.event(server.message_event(general, msg))
    assert event is not None and event.message is not None
    text = event.message.text
    assert len(text) == MAX_TEXT
    assert text.startswith("look\n[shared message from ")
    read = text.count("[shared message from ")
    assert read in (2, 3)  # two of 30,000 characters, maybe the start of a third: no more
    assert len(event.message.mentions) >= 40  # the mentions in the shares read are mentions
    # the text and the attachments share one allowance of look-ups (+1: alice herself)
    assert _lookups(server, "users.info") == LOOKUPS_PER_MESSAGE + 1


async def test_no_more_than_five_attachments_are_read(server: SlackServer, mapper: Mapper) -> None:
    alice = server.add_user("alice")
    general = server.add_channel("general")
    msg = server.user_message(alice, general, "")
    msg["attachments"] = [{"text": f"line {i}"} for i in range(8)]
    event = await mapper.event(server.message_event(general, msg))
    assert event is not None and event.message is not None
    assert event.message.text == "\n".join(f"line {i}" for i in range(5))


async def test_an_edit_that_adds_a_share_is_read_and_one_that_adds_a_preview_is_not(
    server: SlackServer, mapper: Mapper
) -> None:
    alice, bob = server.add_user("alice"), server.add_user("bob")
    general = server.add_channel("general")
    msg = server.user_message(alice, general, "<https://x.slack.com/archives/C1/p1>")
    preview = {**msg, "attachments": [{"title": "x", "original_url": "https://x.example"}]}
    assert await mapper.event(server.changed_event(general, msg, preview)) is None
    shared = {**msg, "attachments": [_share(bob, "the build is <@U0BOT00001|kuu>'s")]}
    event = await mapper.event(server.changed_event(general, msg, shared))
    assert event is not None and event.kind is EventKind.EDITED
    assert event.text == ("https://x.slack.com/archives/C1/p1\n[shared message from bob]\n"
                          "> the build is @Kuu's")
    again = {**shared, "attachments": [*shared["attachments"], preview["attachments"][0]]}
    assert await mapper.event(server.changed_event(general, shared, again)) is None
