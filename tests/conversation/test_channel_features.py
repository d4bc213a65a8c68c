"""Features added for issue 13's second round: second-resolution gaps, the channel's
pace, and the candidate conversation as a whole."""

from __future__ import annotations

import numpy as np
import pytest

from kuuki.conversation.features import FEATURE_NAMES, ChannelFeatures
from kuuki.conversation.history import Post

COL = {n: k for k, n in enumerate(FEATURE_NAMES)}


def _feed(state: ChannelFeatures, turns: list[Post]) -> None:
    """Commit each turn with the previous one as parent (self for the first)."""
    for t in turns:
        state.features(t)
        state.commit(t, state.n - 1 if state.n else 0)


def test_gap0_means_within_a_minute_on_logs_with_seconds() -> None:
    state = ChannelFeatures(window=5)
    _feed(state, [Post("a", "first line", 10.0), Post("b", "second line", 10.75)])
    _, x = state.features(Post("c", "third line", 11.5))
    # candidates: self, b (0.75 min back), a (1.5 min back)
    assert x[1:, COL["gap0"]].tolist() == [1.0, 0.0]
    assert x[1:, COL["log_gap"]] == pytest.approx(np.log1p([0.75, 1.5]))


def test_gaps_are_also_given_in_units_of_the_channels_pace() -> None:
    # the same gaps read differently in a busy and in a slow channel
    busy = ChannelFeatures(window=10)
    _feed(busy, [Post(f"u{k}", f"line {k}", 0.1 * k) for k in range(5)])  # 10 a minute
    slow = ChannelFeatures(window=10)
    _feed(slow, [Post(f"u{k}", f"line {k}", 10.0 * k) for k in range(5)])  # 1 in 10 min
    _, xb = busy.features(Post("x", "next", 0.4 + 5.0))
    _, xs = slow.features(Post("x", "next", 40.0 + 5.0))
    assert xb[1, COL["log_gap"]] == pytest.approx(xs[1, COL["log_gap"]])  # 5 minutes
    assert xb[0, COL["log_pace"]] == pytest.approx(np.log((5.4 - 0.0) / 5))
    assert xs[0, COL["log_pace"]] == pytest.approx(np.log(45.0 / 5))
    assert xb[1, COL["log_gap_rel"]] > xs[1, COL["log_gap_rel"]] + 1.0
    assert xb[1, COL["log_idle_rel"]] > xs[1, COL["log_idle_rel"]] + 1.0


def test_a_burst_in_one_minute_does_not_divide_by_zero() -> None:
    state = ChannelFeatures(window=5)
    _feed(state, [Post(f"u{k}", f"line {k}", 3.0) for k in range(4)])
    _, x = state.features(Post("x", "same minute", 3.0))
    assert np.isfinite(x).all()
    assert x[0, COL["log_pace"]] == pytest.approx(np.log(0.05))


def test_features_of_the_candidate_conversation_as_a_whole() -> None:
    state = ChannelFeatures(window=10)
    state.commit(Post("alice", "my wifi drops every hour", 0.0), 0)
    state.commit(Post("bob", "alice: which driver?", 1.0), 0)
    state.commit(Post("carol", "anyone tried the new kernel", 1.5), 2)
    _, x = state.features(Post("alice", "bob: iwlwifi", 2.0))
    # candidates: self, carol (2), bob (1), alice (0); bob and alice are one conversation
    rows = x[1:]
    assert rows[:, COL["i_root_of_conv"]].tolist() == [0, 1, 1]  # alice opened it
    assert rows[:, COL["conv_addressed_me"]].tolist() == [0, 1, 1]  # bob addressed alice
    assert rows[:, COL["lead_root_of_conv"]].tolist() == [0, 0, 0]  # bob did not open it
    assert rows[:, COL["log_mine_in_conv"]] == pytest.approx(np.log1p([0, 1, 1]))
