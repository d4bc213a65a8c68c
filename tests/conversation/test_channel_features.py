"""Features added for issue 13's second round: far candidates, second-resolution gaps,
the channel's pace, and the candidate conversation as a whole."""

from __future__ import annotations

import numpy as np
import pytest

from kuuki.conversation.features import FEATURE_NAMES, ChannelState, Turn

COL = {n: k for k, n in enumerate(FEATURE_NAMES)}


def _feed(state: ChannelState, turns: list[Turn]) -> None:
    """Commit each turn with the previous one as parent (self for the first)."""
    for t in turns:
        state.features(t)
        state.commit(t, state.n - 1 if state.n else 0)


def test_far_candidates_reach_the_speakers_last_message_beyond_the_window() -> None:
    state = ChannelState(window=5)
    turns = [Turn("asker", "how do I mount an ntfs disk?", 0.0)]
    turns += [Turn(f"u{k}", f"chatter number {k}", 1.0 + k) for k in range(7)]
    _feed(state, turns)
    # message 8: the asker again, 8 messages after their question (window 5)
    cand, x = state.features(Turn("asker", "anyone? ntfs mount still fails", 10.0))
    assert cand[0] == 8
    assert cand[1:6].tolist() == [7, 6, 5, 4, 3]  # the window, newest first
    assert cand[6:].tolist() == [0]  # the far candidate: the asker's own question
    assert x[:, COL["far"]].tolist() == [0, 0, 0, 0, 0, 0, 1]
    assert x[6, COL["j_is_my_last"]] == 1.0
    assert x[6, COL["log_dist"]] == pytest.approx(np.log1p(8))


def test_no_far_candidate_beyond_twice_the_window_or_for_a_new_speaker() -> None:
    state = ChannelState(window=3)
    turns = [Turn("asker", "question about grub?", 0.0)]
    turns += [Turn(f"u{k}", f"chatter {k}", 1.0 + k) for k in range(7)]
    _feed(state, turns)
    # the asker's question is 8 back: beyond 2 * window (6)
    cand, x = state.features(Turn("asker", "still there?", 10.0))
    assert 0 not in cand.tolist() and x[:, COL["far"]].sum() == 0
    cand, _ = state.features(Turn("newcomer", "hi all", 10.0))
    assert len(cand) == 4  # self and the window only


def test_far_candidate_for_the_person_addressed_but_never_a_system_line() -> None:
    state = ChannelState(window=3)
    turns = [Turn("quitter", "quitter has quit", 0.0, system=True)]
    turns += [Turn("helper", "try fsck on it", 0.5)]
    turns += [Turn(f"u{k}", f"chatter {k}", 1.0 + k) for k in range(3)]
    _feed(state, turns)
    cand, x = state.features(Turn("quitter", "back again", 4.5))
    assert cand.tolist() == [5, 4, 3, 2]  # their last line is a system line: no far one
    cand, x = state.features(Turn("asker", "helper: fsck says clean", 5.0))
    assert cand.tolist() == [5, 4, 3, 2, 1]  # helper's message, outside the window
    assert x[-1, COL["far"]] == 1.0


def test_gap0_means_within_a_minute_on_logs_with_seconds() -> None:
    state = ChannelState(window=5)
    _feed(state, [Turn("a", "first line", 10.0), Turn("b", "second line", 10.75)])
    _, x = state.features(Turn("c", "third line", 11.5))
    # candidates: self, b (0.75 min back), a (1.5 min back)
    assert x[1:, COL["gap0"]].tolist() == [1.0, 0.0]
    assert x[1:, COL["log_gap"]] == pytest.approx(np.log1p([0.75, 1.5]))


def test_gaps_are_also_given_in_units_of_the_channels_pace() -> None:
    # the same gaps read differently in a busy and in a slow channel
    busy = ChannelState(window=10)
    _feed(busy, [Turn(f"u{k}", f"line {k}", 0.1 * k) for k in range(5)])  # 10 a minute
    slow = ChannelState(window=10)
    _feed(slow, [Turn(f"u{k}", f"line {k}", 10.0 * k) for k in range(5)])  # 1 in 10 min
    _, xb = busy.features(Turn("x", "next", 0.4 + 5.0))
    _, xs = slow.features(Turn("x", "next", 40.0 + 5.0))
    assert xb[1, COL["log_gap"]] == pytest.approx(xs[1, COL["log_gap"]])  # 5 minutes
    assert xb[0, COL["log_pace"]] == pytest.approx(np.log((5.4 - 0.0) / 5))
    assert xs[0, COL["log_pace"]] == pytest.approx(np.log(45.0 / 5))
    assert xb[1, COL["log_gap_rel"]] > xs[1, COL["log_gap_rel"]] + 1.0
    assert xb[1, COL["log_idle_rel"]] > xs[1, COL["log_idle_rel"]] + 1.0


def test_a_burst_in_one_minute_does_not_divide_by_zero() -> None:
    state = ChannelState(window=5)
    _feed(state, [Turn(f"u{k}", f"line {k}", 3.0) for k in range(4)])
    _, x = state.features(Turn("x", "same minute", 3.0))
    assert np.isfinite(x).all()
    assert x[0, COL["log_pace"]] == pytest.approx(np.log(0.05))


def test_features_of_the_candidate_conversation_as_a_whole() -> None:
    state = ChannelState(window=10)
    state.commit(Turn("alice", "my wifi drops every hour", 0.0), 0)
    state.commit(Turn("bob", "alice: which driver?", 1.0), 0)
    state.commit(Turn("carol", "anyone tried the new kernel", 1.5), 2)
    _, x = state.features(Turn("alice", "bob: iwlwifi", 2.0))
    # candidates: self, carol (2), bob (1), alice (0); bob and alice are one conversation
    rows = x[1:]
    assert rows[:, COL["i_root_of_conv"]].tolist() == [0, 1, 1]  # alice opened it
    assert rows[:, COL["conv_addressed_me"]].tolist() == [0, 1, 1]  # bob addressed alice
    assert rows[:, COL["lead_root_of_conv"]].tolist() == [0, 0, 0]  # bob did not open it
    assert rows[:, COL["log_mine_in_conv"]] == pytest.approx(np.log1p([0, 1, 1]))
