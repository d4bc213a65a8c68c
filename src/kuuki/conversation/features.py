"""The reply-candidate features of a new message, computed from its channel's history.

:class:`ChannelFeatures` is the channel's :class:`~kuuki.conversation.history.ChannelHistory`
with ``features(turn)``: the features of a new message against all of its candidate
parents (the previous ``window`` messages plus itself, meaning "starts a conversation")
come out of a handful of vector operations: that is what keeps disentanglement cheap
enough for the message path. Only earlier messages are ever looked at. The feature bytes
are what the shipped weights were trained on: a change here is a change of model.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

from kuuki.conversation import cues
from kuuki.conversation.history import FLAG_COLUMNS, ChannelHistory, FloatArray, Post

# fmt: off
FEATURE_NAMES: tuple[str, ...] = (
    "is_self", "log_dist", "dist1", "dist2", "dist_le5", "log_gap", "gap0", "same_speaker",
    "i_leads_j", "i_mentions_j", "j_leads_i", "j_mentions_i", "j_latest_of_speaker",
    "lead_latest", "i_addresses", "j_addresses", "j_system", "i_system", "q_i", "q_j", "thanks_i",
    "url_i", "url_j", "q_j_other", "cos", "cos_conv", "cos_rel", "j_conv_latest", "log_conv_size",
    "i_in_conv", "lead_in_conv", "conv_of_my_last", "j_is_my_last", "j_replied_to_me",
    "log_children", "log_since_conv", "log_conv_idle", "log_pair_hist", "reply_to", "overlap",
    "log_len_i", "log_len_j", "greeting_i", "log_gap_prev", "i_new_speaker", "max_cos",
    "prev_nonsystem", "j_q_answered", "cos_conv_last", "lead_unresolved", "j_leads_other",
    "latest_to_me", "max_cos_conv", "log_shared", "cos_parent_j", "log_conv_speakers", "sim",
    "sim_rel", "max_sim_conv", "conv_addressed_me", "i_root_of_conv", "lead_root_of_conv",
    "log_mine_in_conv", "max_overlap_conv", "log_pace", "log_gap_rel", "log_idle_rel",
)
# fmt: on
N_FEATURES = len(FEATURE_NAMES)
# Floor of the pace (minutes per message) so a burst in one minute does not divide by 0.
_MIN_PACE = 0.05
_F = {name: k for k, name in enumerate(FEATURE_NAMES)}
# message-level features, written to every row at once (order matches features())
_MSG_ROWS = np.array(
    [
        _F[name]
        for name in (
            "i_addresses", "i_system", "q_i", "thanks_i", "url_i", "log_len_i", "greeting_i",
            "i_new_speaker", "lead_unresolved",
        )
    ]
)
# The reductions ndarray.max()/.any() make through numpy's Python-level _methods, called
# directly: the same ufunc reduction (bit for bit), one Python frame a call fewer on the
# message path.
_max = np.maximum.reduce
_any = np.logical_or.reduce
# up to this many partners, the pair history is spread with vector compares
_FEW_PAIRS = 8
# the columns of ChannelHistory.flags, and the features of ``ids == me``
_FLAG_ROWS = np.array([_F[name] for name in FLAG_COLUMNS])
_ID_ROWS = np.array([_F["same_speaker"], _F["j_leads_i"], _F["j_replied_to_me"]])
# features of the candidate's conversation: flags, and the logs of counts and gaps
_CONV_FLAG_ROWS = np.array([
    _F[name] for name in (
        "i_root_of_conv", "lead_root_of_conv", "i_in_conv", "conv_addressed_me", "lead_in_conv",
    )
])
_CONV_LOG_ROWS = np.array([
    _F[name] for name in (
        "log_conv_speakers", "log_since_conv", "log_conv_idle", "log_idle_rel",
        "log_mine_in_conv",
    )
])
_CONV_MAX_IN = np.array([_F["cos"], _F["sim"], _F["overlap"]])
_CONV_MAX_OUT = np.array([_F["max_cos_conv"], _F["max_sim_conv"], _F["max_overlap_conv"]])


@functools.cache
def _distance_rows(window: int) -> FloatArray:
    """The feature rows that depend on a candidate's distance alone, for every column a
    window can have (column 0 is the message itself): a read-only template."""
    xt = np.zeros((N_FEATURES, window + 1), np.float32)
    xt[_F["is_self"], 0] = 1.0
    x = xt[:, 1:]
    x[_F["log_dist"]] = np.log1p(np.arange(1, window + 1, dtype=np.float32))
    x[_F["dist1"], 0] = 1.0
    x[_F["dist2"], 1:2] = 1.0
    x[_F["dist_le5"], :5] = 1.0
    xt.setflags(write=False)
    return xt


def _message_rows(
    xt: FloatArray, turn: Post, lead: int, named: frozenset[int], q_i: bool, new_speaker: bool
) -> None:
    """Message-level features go on every row (the MLP crosses them with is_self)."""
    unresolved = lead < 0 and cues.leading_addressee(turn.text) is not None
    # one broadcast write for all of them (one small numpy call instead of ten)
    xt[_MSG_ROWS] = np.array(
        (
            float(bool(named)),
            float(turn.system),
            float(q_i),
            float((not turn.system) and cues.is_thanks(turn.text)),
            float(cues.has_url(turn.text)),
            np.log1p(len(turn.text.split())),
            float((not turn.system) and cues.is_greeting(turn.text)),
            float(new_speaker),
            float(unresolved),
        ),
        np.float32,
    )[:, None]


class ChannelFeatures(ChannelHistory):
    """Recent history of one channel with the features of a new message against it.

    ``features(turn)`` scores nothing: it returns the candidate global indices (self
    first, then newest to oldest) and their feature rows; ``commit(turn, parent)``
    records the decision so that later messages see the conversation structure.
    """

    def features(self, turn: Post) -> tuple[npt.NDArray[np.int64], FloatArray]:
        i = self.n
        lo = max(self.offset, i - self.window)
        cand_all = np.arange(i, lo - 1, -1, dtype=np.int64)  # self first, then newest first
        cand = cand_all[1:]
        me, lead, named, q_i, words = self._analyse(turn)
        my_last = self._last_by_speaker.get(me, -1)
        rows = cand - self.offset
        # the same rows as a reversed slice: a view, for the gathers that only feed exact
        # operations (comparisons, subtraction); matmul and log inputs stay contiguous
        view = slice(i - 1 - self.offset, lo - 1 - self.offset if lo > self.offset else None, -1)
        k = len(cand)
        # filled feature-major (contiguous rows are cheap to write), returned transposed;
        # what depends on the distance alone comes filled in (`_distance_rows`)
        xt = _distance_rows(self.window)[:, : k + 1].copy()
        vec = turn.vector if turn.vector is not None else self._zero
        _message_rows(xt, turn, lead, named, q_i, my_last < lo)
        if k == 0:
            return cand_all, xt.T
        x = xt[:, 1:]  # pair features: one column per earlier message
        spk = self.spk[view]
        fl = self.flags[view]
        x[_FLAG_ROWS] = fl.T
        x[_ID_ROWS] = (self.ids[view] == me).T
        pace = self._time_rows(xt, turn.minute, view, i, lo)
        self._addressing_rows(x, spk, fl, view, rows, me, lead, named)
        cos, sim = self._content_rows(xt, spk, fl, rows, view, turn, vec, me, words)
        if my_last >= self.offset:
            x[_F["j_is_my_last"]] = cand == my_last
        if turn.reply_to is not None and lo <= turn.reply_to < i:
            x[_F["reply_to"], i - 1 - turn.reply_to] = 1.0
        self._conv_features(
            x, rows, me, lead, my_last, vec, i, turn.minute, cos, sim, bool(words), pace
        )
        return cand_all, xt.T

    def _time_rows(self, xt: FloatArray, minute: float, view: slice, i: int, lo: int) -> float:
        """The gaps to each candidate, raw and in units of the channel's pace; the pace."""
        x = xt[:, 1:]
        gap = np.maximum(minute - self.minute[view], 0.0)
        x[_F["log_gap"]] = np.log1p(gap)
        # the channel's pace: minutes per message over the window. Ten quiet minutes are
        # a long pause in a busy channel and nothing in a slow one (other logs, small
        # servers); gaps are also given in units of that pace.
        in_window = i - lo
        pace: float = max((minute - self.minute[lo - self.offset]) / in_window, _MIN_PACE)
        xt[_F["log_pace"]] = np.log(pace)
        x[_F["log_gap_rel"]] = np.log1p(gap / pace)
        # "within a minute": on minute-only logs (the training data) exactly gap == 0, and
        # the same meaning with seconds (other logs, platforms), where gap == 0 hardly occurs
        x[_F["gap0"]] = gap < 1.0
        xt[_F["log_gap_prev"]] = np.log1p(gap[0])
        return pace

    def _addressing_rows(
        self,
        x: FloatArray,
        spk: npt.NDArray[np.int64],
        fl: npt.NDArray[np.bool_],
        view: slice,
        rows: npt.NDArray[np.int64],
        me: int,
        lead: int,
        named: frozenset[int],
    ) -> None:
        """Who speaks to whom: the new message's addressees among the candidates', theirs
        to its speaker, and the questions of others."""
        if lead >= 0:
            x[_F["i_leads_j"]] = spk == lead
        if named:
            hit = np.zeros(len(spk), bool)
            for sid in named:
                hit |= spk == sid
            x[_F["i_mentions_j"]] = hit
        lead_j = self.lead[view]
        to_me = x[_F["j_leads_i"]] > 0
        x[_F["j_leads_other"]] = (lead_j >= 0) & ~to_me
        first_to_me = int(to_me.argmax())  # the first True (0 when there is none)
        if to_me[first_to_me]:
            x[_F["latest_to_me"], first_to_me] = 1.0
        rl = rows.tolist()
        ments = self._mentions
        # only rows that named someone (the "addresses" flag) can mention me
        named_rows = fl[:, 3].nonzero()[0].tolist()
        if named_rows:
            x[_F["j_mentions_i"], named_rows] = [me in ments[rl[j]] for j in named_rows]
        latest = fl[:, 5]
        if lead >= 0:
            x[_F["lead_latest"]] = (spk == lead) & latest
        x[_F["q_j_other"]] = fl[:, 1] & (spk != me)

    def _content_rows(
        self,
        xt: FloatArray,
        spk: npt.NDArray[np.int64],
        fl: npt.NDArray[np.bool_],
        rows: npt.NDArray[np.int64],
        view: slice,
        turn: Post,
        vec: FloatArray,
        me: int,
        words: frozenset[str],
    ) -> tuple[FloatArray, FloatArray]:
        """What the candidates say against the new message (embedding cosines, the
        reply-tuned similarity, shared words), their replies, and the pair history;
        returns the cosines and similarities."""
        x = xt[:, 1:]
        k = len(rows)
        q = self.proj @ vec if self.proj is not None else vec
        vq = self._vq  # what np.stack((vec, q), axis=1) gave, without allocating it
        vq[:, 0] = vec
        vq[:, 1] = q
        both = self.emb[rows] @ vq
        cos, sim = both[:, 0], both[:, 1]
        x[_F["cos"]] = cos
        x[_F["sim"]] = sim
        x[_F["sim_rel"]] = sim - float(_max(sim, axis=None))
        mx = float(_max(cos, axis=None))
        x[_F["cos_rel"]] = cos - mx
        xt[_F["max_cos"]] = mx
        x[_F["log_children"]] = np.log1p(self.children[rows])
        x[_F["log_len_j"]] = np.log1p(self.nwords[rows])
        first_real = int(fl[:, 0].argmin())  # the first non-system line (0 when none is)
        if not fl[first_real, 0]:
            x[_F["prev_nonsystem"], first_real] = 1.0
        if words:
            # exact word-set overlap (Jaccard) and the count of shared words (the
            # candidates are a run of buffered rows, newest first)
            newest = int(rows[0])
            shared = self._word_index.shared(words, newest - k + 1, newest)
            sizes = self.nset[rows]
            x[_F["overlap"]] = shared / np.maximum(sizes + len(words) - shared, 1.0)
            x[_F["log_shared"]] = np.log1p(shared)
        par = self.parent_row[view]
        has_par = par >= self.offset
        if _any(has_par, axis=None):
            x[_F["cos_parent_j"], has_par] = self.emb[par[has_par] - self.offset] @ vec
        hist = self._pair_hist.get(me)
        if hist:
            if len(hist) <= _FEW_PAIRS:  # a few vector compares beat k dict look-ups
                counts = np.zeros(k, np.int64)
                for other, c in hist.items():
                    counts[spk == other] = c
                x[_F["log_pair_hist"]] = np.log1p(counts)
            else:
                x[_F["log_pair_hist"]] = np.log1p([hist.get(s, 0) for s in spk.tolist()])
        return cos, sim

    def _conv_features(
        self,
        x: FloatArray,
        rows: npt.NDArray[np.int64],
        me: int,
        lead: int,
        my_last: int,
        vec: FloatArray,
        i: int,
        minute: float,
        cos: FloatArray,
        sim: FloatArray,
        has_words: bool,
        pace: float,
    ) -> None:
        sl = self.cslot[rows]
        # the best match among each candidate conversation's messages in the window, for
        # cos, sim and overlap at once: grouped by slot with a stable sort and reduceat,
        # cheaper than a (k, k) same-conversation mask. A max is exact, so the grouping
        # changes no bit; without words the overlap row is all zeros and so is its maximum.
        k = len(sl)
        order = sl.argsort(kind="stable")
        ssl = sl[order]
        starts = np.empty(k, bool)
        starts[0] = True
        np.not_equal(ssl[1:], ssl[:-1], out=starts[1:])
        group = np.empty(k, np.intp)
        group[order] = starts.cumsum() - 1
        best = np.maximum.reduceat(x[_CONV_MAX_IN[:, None], order], starts.nonzero()[0], axis=1)
        x[_CONV_MAX_OUT] = best[:, group]
        # Everything else is a value of the conversation: computed once per conversation
        # (``cv``, the distinct slots in ``group`` order) and spread to the candidates
        # with one gather per block, the same elementwise operations on the same values.
        cv = ssl[starts]
        root = self.cs_root_spk[cv]
        last = self.cs_last[cv]
        idle = np.maximum(minute - self.cs_last_minute[cv], 0.0)
        who = self.cs_speakers
        convs = cv.tolist()
        mine = [who[s].get(me, 0) for s in convs]
        addressed = self.cs_addressed
        flags = np.array(
            (
                root == me,
                root == lead if lead >= 0 else np.zeros(len(cv), bool),
                [m > 0 for m in mine],
                [me in addressed[s] for s in convs],
                [lead in who[s] for s in convs] if lead >= 0 else np.zeros(len(cv), bool),
            ),
            np.float32,
        )
        x[_CONV_FLAG_ROWS] = flags[:, group]
        logs = np.array((self.cs_nspk[cv], i - last, idle, idle / pace, mine), np.float64)
        np.log1p(logs, out=logs)
        x[_CONV_LOG_ROWS] = logs[:, group]
        x[_F["log_conv_size"]] = np.log1p(self.cs_size[cv])[group]
        x[_F["cos_conv"]] = (self.cs_vec[sl] @ vec) / np.maximum(self.cs_norm[sl], 1e-6)
        if my_last >= self.offset:
            x[_F["conv_of_my_last"]] = sl == self.cslot[my_last - self.offset]
        x[_F["cos_conv_last"]] = self.emb[last[group] - self.offset] @ vec
