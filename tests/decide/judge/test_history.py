"""The judge's histories stay bounded over a long run, and their answers do not change."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kuuki.decide.judge.history import Intervention, InterventionHistory, TriggerLedger

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TEN_MIN = timedelta(minutes=10)


def test_the_ledger_forgets_people_the_bot_has_not_acted_for_within_an_hour() -> None:
    ledger = TriggerLedger(sweep_every=100)
    never = TriggerLedger(sweep_every=10**9)  # the same records, never swept
    # one action every 10 s, each for another person in one of 50 channels: ~360 an hour
    for n in range(3000):
        at = T0 + timedelta(seconds=10 * n)
        for lg in (ledger, never):
            lg.record(f"c{n % 50}", f"u{n}", at)
            lg.record(f"c{n % 50}", "regular", at)  # someone the bot answers all along
    assert len(never) == 3050
    assert len(ledger) <= 360 + 100 + 50  # the last hour's people, one sweep's worth more
    now = T0 + timedelta(seconds=10 * 2999)
    for who in ("u2999", "u2950", "u2000", "u5", "regular"):
        for ch in ("c49", "c0", "c7"):
            assert ledger.count(ch, who, now, TEN_MIN) == never.count(ch, who, now, TEN_MIN)
    assert ledger.count("c49", "u2999", now, TEN_MIN) == 1
    assert ledger.count("c49", "regular", now, TEN_MIN) == 2  # every 500 s in c49


def test_the_ledger_refuses_a_window_longer_than_it_keeps() -> None:
    with pytest.raises(ValueError, match="longer than the ledger keeps"):
        TriggerLedger().count("c", "u", T0, timedelta(hours=2))


def test_interventions_of_a_quiet_channel_leave_no_entry_behind() -> None:
    history = InterventionHistory()
    for n in range(500):
        history.record(f"c{n}", Intervention(T0 + timedelta(seconds=n), None, f"m{n}", ""))
    later = T0 + timedelta(hours=2)
    assert all(history.last(f"c{n}", later) is None for n in range(500))
    assert len(history) == 0
