"""What Slack really sends, through the real Mapper (issue 26).

Every file in tests/platforms/payloads/slack/ is one Slack event copied from a capture or
from Slack's documentation (its ``source``; ``about`` says what it is). `EXPECTED` is what
kuuki makes of each: the kind of event, the text the bot reads, who said it, whom it
mentions, its thread, what an edit/delete/reaction targets and the event id. The ids in the
payloads belong to a local Slack seeded with the payloads' users and channels
(`workspace`), so names come from ``users.info``/``conversations.info`` as they would. Rows
of ``conversations.history`` (``history_*``) go through the history reader's own step.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from kuuki.domain import ChatEvent, EventKind
from kuuki.platforms.slack.mapping import Mapper
from kuuki.platforms.slack.names import Directory
from kuuki.platforms.slack.rows import from_history
from kuuki.testing.slack_server import SlackServer

PAYLOADS = Path(__file__).parents[1] / "payloads" / "slack"
BOT = "U0LAN0Z89"  # the bot user of Slack's app_mention example
HISTORY = "C0HISTORY1"  # the channel history rows are read from

USERS = {  # id: (name, is_bot)
    "U05JAA9EN4T": ("lev", False), "U043H11ES4V": ("jadel", False),
    "U061F7AUR": ("dora", False), "U123ABC456": ("ann", False), "U2147483697": ("sam", False),
    "W012A3CDE": ("wren", False), "W0B0BAB3E": ("bea", False),
    "U07M725KAD7": ("GitHub", True), "U04130YGVK8": ("CircleCI", True),
    "U0442US8QGH": ("Slacklinker dev", True), "USLACKBOT": ("Slackbot", True),
}
CHANNELS = {  # id: name (D…: a DM with that user, G…: private, "mpim" a multi-party DM)
    "C07KHDGQ7K3": "shares", "C043YJGBY49": "general", "C07LRFB3C8M": "github",
    "C012345678": "ci", "C012346789": "email", "C045V0VJT16": "random",
    "C07KH38CR5E": "reacji", "C043KSKGJUB": "testing-slack-app", "C123ABC456": "docs",
    "CDCSLJ4CF": "threads", "C061C15S0E5": "cleanup", HISTORY: "history",
    "D0442US94JD": "U043H11ES4V", "D043HMJ0WDU": "USLACKBOT",
    "G024BE91L": "mpim", "G0PRIVATE1": "roadmap",
}


def workspace(server: SlackServer) -> None:
    """Seed the local Slack with the payloads' users, channels and user groups."""
    for uid, (name, is_bot) in USERS.items():
        server.add_user(name, uid=uid, is_bot=is_bot)
    server.add_usergroup("design-team", gid="SAZ94GDB8")
    for cid, name in CHANNELS.items():
        if cid.startswith("D"):
            server.add_channel("", im_user=name, cid=cid)
        elif name == "mpim":
            server.add_channel("mpdm-sam--ann-1", mpim=True, cid=cid)
        else:
            server.add_channel(name, private=cid.startswith("G"), cid=cid)


@dataclass(frozen=True)
class Got:
    """What kuuki made of one payload (None: it was ignored)."""

    kind: EventKind | None
    where: str = ""  # "<channel name> (<visibility>)"
    text: str = ""  # the message's text, an edit's new text, a reaction's emoji
    who: str = ""  # author, editor or reactor ("<name>", "<name> (bot)")
    mentions: tuple[str, ...] = ()
    thread: str | None = None  # kuuki id of the thread root (replies answer it)
    target: str | None = None  # edits, deletes, reactions
    event_id: str = ""


def _got(event: ChatEvent | None) -> Got:
    if event is None:
        return Got(None)
    where = f"{event.channel.name} ({event.channel.visibility.value})"
    msg = event.message
    if msg is not None:
        assert msg.reply_to == msg.thread  # in Slack, a reply answers its thread's root
        who = msg.user.name + (" (bot)" if msg.user.is_bot else "")
        return Got(event.kind, where, msg.text, who, msg.mentions, msg.thread,
                   event_id=event.event_id)
    who = "" if event.user is None else event.user.name
    text = event.text if event.kind is EventKind.EDITED else (event.emoji or "")
    return Got(event.kind, where, text or "", who, target=event.target_id,
               event_id=event.event_id)


P, E, D, R = EventKind.POSTED, EventKind.EDITED, EventKind.DELETED, EventKind.REACTION_ADDED
GENERAL, DOCS = "general (public)", "docs (public)"
GITHUB_ISSUE = ("Issue created by ldub (https://github.com/ldub)\n"
                "#2 test issue 2 (https://github.com/myorg/myrepo/issues/2)\nanother oneeeee")
URL = "https://jadeapptesting.slack.com/archives/C043YJGBY49/p1663966292304369"

EXPECTED: dict[str, Got] = {
    # -- plain messages, DMs, private conversations ------------------------------------------
    "messageExample": Got(P, GENERAL, "dgsfklsdgf", "jadel",
                          event_id="slack:C043YJGBY49:1663966382.046509"),
    "messageIm": Got(P, "dm:jadel (dm)", "test", "jadel",
                     event_id="slack:D0442US94JD:1664408649.009629"),
    "slackbotIm": Got(P, "dm:Slackbot (dm)",
                      "You have been removed from #testing-slack-app by @jadel", "Slackbot (bot)",
                      ("U043H11ES4V",), event_id="slack:D043HMJ0WDU:1664826477.425039"),
    "message_mpim": Got(P, "mpdm-sam--ann-1 (private)", "Let's make a pact.", "sam",
                        event_id="slack:G024BE91L:1355517523.000005"),
    "message_groups": Got(P, "roadmap (private)", "the roadmap stays in here for now", "sam",
                          event_id="slack:G0PRIVATE1:1355517524.000006"),
    "message_rich_text": Got(P, "random (public)",
                             "#general :cat: @jadel https://google.com text text text", "jadel",
                             ("U043H11ES4V",), event_id="slack:C045V0VJT16:1670625739.704049"),
    "link": Got(P, GENERAL, "https://jadeapptesting.slack.com/archives/C043YJGBY49/"
                "p1663961604007869", "jadel", event_id="slack:C043YJGBY49:1663978925.099999"),
    "me_message": Got(P, DOCS, "is doing that thing", "ann",
                      event_id="slack:C123ABC456:1355517525.000007"),
    "enterprise_grid_user": Got(P, DOCS, "@bea can you take the on-call swap?", "wren",
                                ("W0B0BAB3E",), event_id="slack:C123ABC456:1470950000.000100"),
    "app_mention": Got(P, DOCS, "@Kuu is it everything a river should be?", "dora", (BOT,),
                       event_id="slack:C123ABC456:1515449522.000016"),
    "thread_broadcast": Got(P, DOCS, "broadcasting this reply", "ann",
                            thread="C123ABC456:1673464730.703009",
                            event_id="slack:C123ABC456:1673464745.620769"),
    # -- shares and forwards: someone else's words, marked, with their author ----------------
    "forwarded_message": Got(P, "shares (public)", "[shared message from lev]\n> 123", "lev",
                             event_id="slack:C07KHDGQ7K3:1724952300.110719"),
    "share_with_message": Got(P, "shares (public)", "hello check that out!\n"
                              "[shared message from lev]\n> this will be shared with a message",
                              "lev", event_id="slack:C07KHDGQ7K3:1724966800.923979"),
    "share_without_message": Got(P, GENERAL, "[shared message from jadel]\n"
                                 "> blahblahblahblahblah", "jadel",
                                 event_id="slack:C043YJGBY49:1668537593.598469"),
    "app_mention_with_share": Got(P, DOCS, "@Kuu can you summarise this?\n"
                                  "[shared message from lev]\n"
                                  "> the deploy moves to friday, @ann owns it", "dora",
                                  (BOT, "U123ABC456"),
                                  event_id="slack:C123ABC456:1515449600.000100"),
    # a link to a Slack message, unfurled by Slack after it was posted: the linked words are
    # read as shared, an edit of the message (its text did not change)
    "messageChange": Got(E, GENERAL, f"{URL}\n[shared message from jadel]\n> asdfhlkfasdlhsdf",
                         "jadel", target="C043YJGBY49:1663969333.524439",
                         event_id="slack:C043YJGBY49:1663969333.524439:edit:1663969334.001500"),
    # -- Slack's markup: dates, user groups, @here/@channel (never a mention of a person) ----
    "formatting_labelled": Got(P, DOCS, "@here release review Feb 18, 2014 PST with @happy-peeps",
                               "ann", event_id="slack:C123ABC456:1392734400.000100"),
    "formatting_bare": Got(P, DOCS, "@channel freeze starts 2014-02-18 14:39 UTC ask @design-team",
                           "ann", event_id="slack:C123ABC456:1392734500.000200"),
    # -- bots and apps ------------------------------------------------------------------------
    "botMessage": Got(P, GENERAL, "TEST", "Slacklinker dev (bot)",
                      thread="C043YJGBY49:1664216109.798919",
                      event_id="slack:C043YJGBY49:1664216870.477049"),
    "message_subtype_bot_message": Got(
        P, "reacji (public)", "https://myworkspace.slack.com/archives/C07KTH1T4CQ/"
        "p1724954997876929", "Reacji Channeler (bot)",
        event_id="slack:C07KH38CR5E:1724955010.440469"),
    "github_notification": Got(P, "github (public)", GITHUB_ISSUE, "GitHub (bot)",
                               event_id="slack:C07LRFB3C8M:1725998548.581159"),
    "github_notification_ts_string": Got(P, "github (public)", GITHUB_ISSUE, "GitHub (bot)",
                                         event_id="slack:C07LRFB3C8M:1725998548.581159"),
    "github_with_link": Got(
        P, "github (public)", "Pull request opened by ldub (https://github.com/ldub)\n"
        "#8 https://myteam.slack.com/archives/C07KTH1T4CQ/p1730339894629249 "
        "(https://github.com/myorg/myrepo/pull/8)\nthis is a fake pr with a link\n\n"
        "https://myteam.slack.com/archives/C07KTH1T4CQ/p1730339894629249", "GitHub (bot)",
        event_id="slack:C07LRFB3C8M:1730339959.644979"),
    "bot_message_fields": Got(
        P, DOCS, "Optional pre-text that appears above the attachment block\n"
        "title (https://api.slack.com/)\nOptional `text` that appears within the attachment\n"
        "A field's title: This field's value\nA short field's title: A short field's value\n"
        "A second short field's title: A second short field's value", "ci (bot)",
        event_id="slack:C123ABC456:1700000100.000300"),
    "circleci": Got(P, "ci (public)", "CircleCI job failed.", "CircleCI (bot)",
                    event_id="slack:C012345678:1671046987.237089"),
    "non_spec_attachment": Got(P, "github (public)", "", "GitHub (bot)",
                               event_id="slack:C07LRFB3C8M:1725998548.581159"),
    # -- files --------------------------------------------------------------------------------
    "email_message": Got(P, "email (public)", "[file: meow]", "Slackbot (bot)",
                         event_id="slack:C012346789:1671217113.292829"),
    "message_file_share_slack_connect": Got(P, "dm:jadel (dm)", "message message message [file]",
                                            "jadel", event_id="slack:D0442US94JD:"
                                            "1670631527.874149"),
    "message_file_share": Got(P, "dm:jadel (dm)",
                              "message message message [file: namenamename.txt]", "jadel",
                              event_id="slack:D0442US94JD:1670631527.874149"),
    # -- edits, deletes, reactions, what is ignored -------------------------------------------
    "message_changed_edit": Got(E, DOCS, "Hello, world!", "ann",
                                target="C123ABC456:1355517523.000005",
                                event_id="slack:C123ABC456:1355517523.000005:edit:"
                                "1358878755.000001"),
    "message_deleted": Got(D, GENERAL, target="C043YJGBY49:1663966382.046509",
                           event_id="slack:C043YJGBY49:1663966382.046509:delete"),
    "tombstone_deleted": Got(D, "cleanup (public)", target="C061C15S0E5:1704604884.175949",
                             event_id="slack:C061C15S0E5:1704604884.175949:delete"),
    # deleting a thread root that has replies leaves a tombstone: the root's deletion, live
    # and read back from history alike (one event id with the deletion of the tombstone)
    "tombstone_changed": Got(D, "threads (public)", target="CDCSLJ4CF:1542632616.133300",
                             event_id="slack:CDCSLJ4CF:1542632616.133300:delete"),
    "history_tombstone": Got(D, "history (public)", target="C0HISTORY1:1715816895.059599",
                             event_id="slack:C0HISTORY1:1715816895.059599:delete"),
    "reaction_added": Got(R, DOCS, "👍", "ann", target="C123ABC456:1360782400.498405",
                          event_id="slack:C123ABC456:1360782400.498405:react:U123ABC456:"
                          "thumbsup:1360782804.083113"),
    "history_web_unfurl": Got(P, "history (public)", "see https://example.com/", "ann",
                              event_id="slack:C0HISTORY1:1700000000.000100"),
    "joinChannel": Got(None),
    "web_unfurl_changed": Got(None),
}


def _payload(name: str) -> dict[str, Any]:
    doc = json.loads((PAYLOADS / f"{name}.json").read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


@pytest.fixture
async def mapper() -> AsyncIterator[Mapper]:
    server = SlackServer(bot_name="Kuu")
    await server.start()
    workspace(server)
    try:
        async with aiohttp.ClientSession() as session:
            client = AsyncWebClient(token="xoxb-t", base_url=server.api_url, session=session)
            yield Mapper(Directory(client, team_id=server.team_id, bot_user_id=BOT,
                                   bot_name="Kuu"), bot_id="B0LAN0Z89")
    finally:
        await server.close()


async def _map(mapper: Mapper, name: str) -> ChatEvent | None:
    payload = _payload(name)["payload"]
    if name.startswith("history_"):
        return await from_history(mapper, HISTORY, payload)
    return await mapper.event(payload)


def test_every_payload_says_where_it_comes_from_and_has_an_expectation() -> None:
    names = {p.stem for p in PAYLOADS.glob("*.json")}
    assert names == set(EXPECTED)
    for name in names:
        doc = _payload(name)
        assert set(doc) == {"source", "about", "payload"}, name
        assert doc["source"].startswith("https://") and doc["about"], name
        assert isinstance(doc["payload"], dict) and doc["payload"].get("type"), name


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_payload(mapper: Mapper, name: str) -> None:
    assert _got(await _map(mapper, name)) == EXPECTED[name]


async def test_an_app_mention_and_its_message_twin_are_one_event(mapper: Mapper) -> None:
    mention = _payload("app_mention")["payload"]
    twin = {**mention, "type": "message", "channel_type": "channel"}
    first, second = await mapper.event(mention), await mapper.event(twin)
    assert first is not None and second is not None
    assert first.event_id == second.event_id  # the engine handles the id once
    assert _got(first) == _got(second)
