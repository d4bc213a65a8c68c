"""`[channels.policy.<channel>]`: checked with errors that name the key as written, and
matched by name or id, a thread by its channel."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from kuuki.domain import Channel
from kuuki.errors import ConfigError
from kuuki.settings import load_settings
from kuuki.settings.policy import ChannelPolicy, PolicyBook, policies


def loaded(tmp_path: Path, text: str) -> dict[str, ChannelPolicy]:
    path = tmp_path / "kuuki.toml"
    path.write_text(text, encoding="utf-8")
    return dict(load_settings(env={}, path=path).channel_policy)


def test_a_table_per_channel_by_name_or_id(tmp_path: Path) -> None:
    got = loaded(tmp_path, """
[channels.policy."#support"]
mode = "asked"
[channels.policy.C0123]
readiness = -10
keywords = ["deploy"]
proactive = false
quiet_hours = "23:00-07:00"
timezone = "Asia/Tokyo"
""")
    assert got["support"] == ChannelPolicy(mode="asked")
    assert got["C0123"].readiness == -10 and got["C0123"].keywords == ("deploy",)
    assert str(got["C0123"].quiet_hours) == "23:00-07:00" and not got["C0123"].proactive


@pytest.mark.parametrize(("line", "key", "problem"), [
    ('mode = "loud"', "channels.policy.support.mode", "expected one of member, asked, listen"),
    ("readiness = 80", "channels.policy.support.readiness", "from -50 to 50"),
    ('quiet_hours = "late"', "channels.policy.support.quiet_hours", "HH:MM-HH:MM"),
    ('quiet_hours = "25:00-07:00"', "channels.policy.support.quiet_hours", "HH:MM-HH:MM"),
    ('timezone = "Mars/Olympus"', "channels.policy.support.timezone", "unknown time zone"),
    ('language = "fr"', "channels.policy.support.language", "expected one of ja, en"),
    ('proactive = "sometimes"', "channels.policy.support.proactive", "true or false"),
    ('moode = "asked"', "channels.policy.support.moode", "unknown key; expected one of mode"),
])
def test_a_wrong_value_names_its_key(tmp_path: Path, line: str, key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        loaded(tmp_path, f"[channels.policy.support]\n{line}\n")
    assert err.value.key == key
    assert problem in err.value.problem


def test_quiet_hours_across_midnight_in_the_zone() -> None:
    p = policies("p", {"x": {"quiet_hours": "23:00-07:00", "timezone": "Asia/Tokyo"}})["x"]
    tokyo = [(14, 30, True), (21, 59, True), (22, 0, False), (13, 59, False), (0, 0, False)]
    # UTC hour → quiet in Tokyo (UTC+9): 14:30 UTC is 23:30, 21:59 is 06:59, 22:00 is 07:00
    for hour, minute, quiet in tokyo:
        now = datetime(2026, 1, 5, hour, minute, tzinfo=UTC)
        assert p.quiet_at(now) is quiet, (hour, minute)


def test_a_thread_follows_its_channel_and_changes_lie_over_the_file() -> None:
    book = PolicyBook(policies("p", {"support": {"mode": "asked"}}))
    support = Channel("C1", "support")
    thread = Channel("T1", "a question", parent_id="C1")
    assert book.of(support).mode == "asked"
    assert book.of(thread).mode == "asked"  # the parent's name, learnt from the channel
    book.set(thread, {"readiness": "5"})
    assert book.of(support) == ChannelPolicy(mode="asked", readiness=5)
    assert book.reset(support) == ChannelPolicy(mode="asked")
    with pytest.raises(ConfigError) as err:
        book.set(support, {"mode": "shout"})
    assert err.value.key == "/kuuki mode.mode"
    assert book.of(support).mode == "asked"  # nothing changed
