"""Online channel state and the reply-candidate features computed from it.

:class:`ChannelState` holds the recent messages of one channel in flat numpy arrays so
that the features of a new message against all of its candidate parents (the previous
``window`` messages plus itself, meaning "starts a conversation") come out of a handful
of vector operations: that is what keeps disentanglement cheap enough for the
message path. Only earlier messages are ever looked at.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kuuki.conversation import cues
from kuuki.conversation.speakers import Speakers

FloatArray = npt.NDArray[np.float32]

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
# Bounds of one channel's state: ``capacity`` rows (512, compacted to the last 2 * window
# when full), as many conversation slots, and at most this many (speaker, addressee) counts.
# Speaker ids (the alias table) grow with the channel's distinct members, ~200 bytes each.
_MAX_PAIRS = 20_000
# The rows start at this many and double up to ``capacity`` as the channel talks: a bot in
# thousands of quiet channels must not hold half a megabyte of empty rows for each
# (issue 11's soak; a full state is ~0.55 MB at 128 dimensions).
_FIRST_ROWS = 32
_FILL = {"ids": -1, "parent_row": -1, "cs_root_spk": -1}
_SLOT_ARRAYS = (
    "cs_vec", "cs_norm", "cs_size", "cs_last", "cs_last_minute", "cs_id", "cs_nspk",
    "cs_root_spk",
)
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
# up to this many partners, the pair history is spread with vector compares
_FEW_PAIRS = 8
# the columns of ChannelState.flags, and the features of ``ids == me``
_FLAG_ROWS = np.array(
    [
        _F[name]
        for name in (
            "j_system", "q_j", "url_j", "j_addresses", "j_q_answered", "j_latest_of_speaker",
            "j_conv_latest",
        )
    ]
)
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
_ROW_ARRAYS = (
    "ids",
    "minute",
    "flags",
    "children",
    "nwords",
    "nset",
    "answered",
    "emb",
    "cslot",
    "parent_row",
)


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


@dataclass(slots=True)
class Turn:
    """One message as the disentangler sees it: platform-neutral and index-free."""

    speaker: str
    text: str
    minute: float
    vector: FloatArray | None = None
    system: bool = False
    reply_to: int | None = None  # global index of the platform's explicit reply target
    mentions: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other names the speaker goes by (display name…)


class ChannelState:
    """Recent history of one channel, indexed by a global message counter.

    ``features(turn)`` scores nothing: it returns the candidate global indices (self
    first, then newest to oldest) and their feature rows; ``commit(turn, parent)``
    records the decision so that later messages see the conversation structure.
    """

    def __init__(
        self,
        window: int = 50,
        dim: int = 512,
        capacity: int = 512,
        proj: FloatArray | None = None,
    ) -> None:
        self.window = window
        self.dim = dim
        # the reply-tuned similarity's matrix; without one, "sim" is the plain cosine
        self.proj = proj
        self._max_cap = max(capacity, 4 * window + 8)
        self._cap = min(self._max_cap, _FIRST_ROWS)
        self.offset = 0  # global index of row 0
        self.n = 0  # global index of the next message
        self._alloc()
        self._mentions: list[frozenset[int]] = []
        self._words: list[frozenset[str]] = []  # content words, one set per buffered row
        self.speakers = Speakers()
        self._last_by_speaker: dict[int, int] = {}
        self._pair_hist: dict[int, dict[int, int]] = {}
        self._pending: tuple[Turn, tuple[int, int, frozenset[int], bool, frozenset[str]]] | None
        self._pending = None

    def _alloc(self) -> None:
        cap = self._cap
        # per-row speaker ids and flags side by side, so that features() gathers each
        # group with one index and writes it with one assignment (see _views)
        self.ids = np.full((cap, 3), -1, np.int64)
        self.minute = np.zeros(cap, np.float64)
        self.flags = np.zeros((cap, len(_FLAG_ROWS)), bool)
        self.children = np.zeros(cap, np.float32)
        self.nwords = np.zeros(cap, np.float32)
        self.nset = np.zeros(cap, np.float32)  # len(self._words[row])
        self.answered = np.zeros(cap, bool)
        self.emb = np.zeros((cap, self.dim), np.float32)
        self.cslot = np.zeros(cap, np.int64)
        self.parent_row = np.full(cap, -1, np.int64)  # global index of the chosen parent
        # conversation slots: one per conversation that still has a message in the buffer
        self.cs_vec = np.zeros((cap, self.dim), np.float32)
        self.cs_norm = np.zeros(cap, np.float32)
        self.cs_size = np.zeros(cap, np.float32)
        self.cs_last = np.zeros(cap, np.int64)
        self.cs_last_minute = np.zeros(cap, np.float64)
        self.cs_id = np.zeros(cap, np.int64)
        self.cs_speakers: list[dict[int, int]] = [{} for _ in range(cap)]
        self.cs_nspk = np.zeros(cap, np.float64)  # len(cs_speakers[slot]), kept as an array
        self.cs_root_spk = np.full(cap, -1, np.int64)  # who opened the conversation
        # speakers the conversation's messages addressed (leading name or mention)
        # (one shared empty frozenset until a conversation addresses someone: 512 empty sets
        # a channel would be ~11 MB over the ingest benchmark's 100 channels)
        self.cs_addressed: list[frozenset[int]] = [frozenset()] * cap
        self._free = list(range(cap - 1, -1, -1))
        self._zero = np.zeros(self.dim, np.float32)
        self._vq = np.zeros((self.dim, 2), np.float32)
        self._views()

    def _views(self) -> None:
        # named columns of ``ids`` and ``flags`` (writable views, rebound when they grow)
        self.spk, self.lead, self.parent_spk = (self.ids[:, c] for c in range(3))
        (
            self.system,
            self.q,
            self.url,
            self.addresses,
            self.answered,
            self.latest_spk,  # still the speaker's latest message
            self.latest_conv,  # still its conversation's latest message
        ) = (self.flags[:, c] for c in range(len(_FLAG_ROWS)))

    # -- speakers -------------------------------------------------------------------

    def speaker_id(self, name: str, aliases: tuple[str, ...] = ()) -> int:
        return self.speakers.id(name, aliases)

    def _analyse(self, turn: Turn) -> tuple[int, int, frozenset[int], bool, frozenset[str]]:
        # features() and commit() both need this; compute it once per message
        if self._pending is not None and self._pending[0] is turn:
            return self._pending[1]
        me = self.speaker_id(turn.speaker, turn.aliases)
        lead, named = self.speakers.addressing(turn.text, turn.mentions, turn.system)
        q_i = (not turn.system) and cues.is_question(turn.text)
        words = cues.content_words(turn.text) if not turn.system else frozenset()
        out = (me, lead, named, q_i, words)
        self._pending = (turn, out)
        return out

    # -- features -------------------------------------------------------------------

    def features(self, turn: Turn) -> tuple[npt.NDArray[np.int64], FloatArray]:
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

        # message-level features go on every row (the MLP crosses them with is_self)
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
                float(my_last < lo),
                float(unresolved),
            ),
            np.float32,
        )[:, None]
        if k == 0:
            return cand_all, xt.T
        x = xt[:, 1:]  # pair features: one column per earlier message

        spk = self.spk[view]
        fl = self.flags[view]
        x[_FLAG_ROWS] = fl.T
        x[_ID_ROWS] = (self.ids[view] == me).T
        gap = np.maximum(turn.minute - self.minute[view], 0.0)
        x[_F["log_gap"]] = np.log1p(gap)
        # the channel's pace: minutes per message over the window. Ten quiet minutes are
        # a long pause in a busy channel and nothing in a slow one (other logs, small
        # servers); gaps are also given in units of that pace.
        in_window = i - lo
        pace = max((turn.minute - self.minute[lo - self.offset]) / in_window, _MIN_PACE)
        xt[_F["log_pace"]] = np.log(pace)
        x[_F["log_gap_rel"]] = np.log1p(gap / pace)
        # "within a minute": on minute-only logs (the training data) exactly gap == 0, and
        # the same meaning with seconds (other logs, platforms), where gap == 0 hardly occurs
        x[_F["gap0"]] = gap < 1.0
        xt[_F["log_gap_prev"]] = np.log1p(gap[0])
        if lead >= 0:
            x[_F["i_leads_j"]] = spk == lead
        if named:
            hit = np.zeros(k, bool)
            for sid in named:
                hit |= spk == sid
            x[_F["i_mentions_j"]] = hit
        lead_j = self.lead[view]
        to_me = x[_F["j_leads_i"]] > 0
        x[_F["j_leads_other"]] = (lead_j >= 0) & ~to_me
        first_to_me = np.flatnonzero(to_me)
        if len(first_to_me):
            x[_F["latest_to_me"], first_to_me[0]] = 1.0
        rl = rows.tolist()
        ments = self._mentions
        # only rows that named someone (the "addresses" flag) can mention me
        named_rows = np.flatnonzero(fl[:, 3]).tolist()
        if named_rows:
            x[_F["j_mentions_i"], named_rows] = [me in ments[rl[j]] for j in named_rows]
        latest = fl[:, 5]
        if lead >= 0:
            x[_F["lead_latest"]] = (spk == lead) & latest
        sys_j = fl[:, 0]
        x[_F["q_j_other"]] = fl[:, 1] & (spk != me)
        q = self.proj @ vec if self.proj is not None else vec
        vq = self._vq  # what np.stack((vec, q), axis=1) gave, without allocating it
        vq[:, 0] = vec
        vq[:, 1] = q
        both = self.emb[rows] @ vq
        cos, sim = both[:, 0], both[:, 1]
        x[_F["cos"]] = cos
        x[_F["sim"]] = sim
        x[_F["sim_rel"]] = sim - float(sim.max())
        mx = float(cos.max())
        x[_F["cos_rel"]] = cos - mx
        xt[_F["max_cos"]] = mx
        x[_F["log_children"]] = np.log1p(self.children[rows])
        x[_F["log_len_j"]] = np.log1p(self.nwords[rows])
        nonsys = np.flatnonzero(~sys_j)
        if len(nonsys):
            x[_F["prev_nonsystem"], nonsys[0]] = 1.0
        if my_last >= self.offset:
            x[_F["j_is_my_last"]] = cand == my_last
        if turn.reply_to is not None and lo <= turn.reply_to < i:
            x[_F["reply_to"], i - 1 - turn.reply_to] = 1.0
        if words:
            # exact word-set overlap (Jaccard) and the count of shared words
            row_words = self._words
            shared = np.array([len(words & row_words[r]) for r in rl], np.float32)
            sizes = self.nset[rows]
            x[_F["overlap"]] = shared / np.maximum(sizes + len(words) - shared, 1.0)
            x[_F["log_shared"]] = np.log1p(shared)
        par = self.parent_row[view]
        has_par = par >= self.offset
        if has_par.any():
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
        self._conv_features(
            x, rows, me, lead, my_last, vec, i, turn.minute, cos, sim, bool(words), pace
        )
        return cand_all, xt.T

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
        order = np.argsort(sl, kind="stable")
        ssl = sl[order]
        starts = np.empty(k, bool)
        starts[0] = True
        np.not_equal(ssl[1:], ssl[:-1], out=starts[1:])
        group = np.empty(k, np.intp)
        group[order] = np.cumsum(starts) - 1
        best = np.maximum.reduceat(x[_CONV_MAX_IN[:, None], order], np.flatnonzero(starts), axis=1)
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

    # -- updates --------------------------------------------------------------------

    def conversation_id(self, index: int) -> int:
        """Conversation of a message still in the buffer (-1 if it has been dropped)."""
        if not self.offset <= index < self.n:
            return -1
        return int(self.cs_id[self.cslot[index - self.offset]])

    def commit(self, turn: Turn, parent: int) -> int:
        """Record the new message with its chosen parent; returns its conversation id."""
        if self.n - self.offset >= self._cap:
            if self._cap < self._max_cap:
                self._grow()
            else:
                self._compact()
        i = self.n
        r = i - self.offset
        me, lead, named, q_i, words = self._analyse(turn)
        self._pending = None
        # rows are reused after compaction: reset what later messages update
        self.answered[r] = False
        self.latest_spk[r] = self.latest_conv[r] = True
        self.children[r] = 0.0
        self.parent_spk[r] = -1
        self.spk[r] = me
        self.minute[r] = turn.minute
        self.system[r] = turn.system
        self.q[r] = q_i
        self.url[r] = cues.has_url(turn.text)
        self.lead[r] = lead
        self.addresses[r] = bool(named)
        self.nwords[r] = len(turn.text.split())
        vec = turn.vector if turn.vector is not None else self._zero
        self.emb[r] = vec
        self._mentions.append(named)
        self._words.append(words)
        self.nset[r] = len(words)
        self.parent_row[r] = parent if parent != i and self.offset <= parent < i else -1
        for other in named:
            mine = self._pair_hist.setdefault(me, {})
            mine[other] = mine.get(other, 0) + 1
            theirs = self._pair_hist.setdefault(other, {})
            theirs[me] = theirs.get(me, 0) + 1
        prev = self._last_by_speaker.get(me)
        if prev is not None and prev >= self.offset:
            self.latest_spk[prev - self.offset] = False
        self._last_by_speaker[me] = i
        if parent != i and self.offset <= parent < i:
            pr = parent - self.offset
            slot = int(self.cslot[pr])
            self.children[pr] += 1
            self.parent_spk[r] = self.spk[pr]
            if self.spk[pr] != me:
                self.answered[pr] = True
            last = int(self.cs_last[slot])
            if last >= self.offset:
                self.latest_conv[last - self.offset] = False
            self.cs_vec[slot] += vec
            self.cs_size[slot] += 1
        else:
            slot = self._free.pop()
            self.cs_id[slot] = i
            self.cs_vec[slot] = vec
            self.cs_size[slot] = 1
            self.cs_speakers[slot] = {}
            self.cs_root_spk[slot] = me
            self.cs_addressed[slot] = frozenset()
        self.cs_last[slot] = i
        self.cs_last_minute[slot] = turn.minute
        self.cs_norm[slot] = np.linalg.norm(self.cs_vec[slot])
        who = self.cs_speakers[slot]
        who[me] = who.get(me, 0) + 1
        self.cs_nspk[slot] = len(who)
        if named:
            self.cs_addressed[slot] = self.cs_addressed[slot] | named
        self.cslot[r] = slot
        self.n = i + 1
        return int(self.cs_id[slot])

    def replace_vector(self, index: int, new: FloatArray, old: FloatArray | None) -> None:
        """An edited message: swap its embedding here and in its conversation's centroid."""
        if not self.offset <= index < self.n:
            return
        r = index - self.offset
        slot = int(self.cslot[r])
        if old is not None:
            self.cs_vec[slot] -= old
        self.cs_vec[slot] += new
        self.cs_norm[slot] = np.linalg.norm(self.cs_vec[slot])
        self.emb[r] = new

    def retire(self, index: int, old: FloatArray | None) -> None:
        """A deleted message: it stays in the history but looks like a system line."""
        if not self.offset <= index < self.n:
            return
        r = index - self.offset
        if old is not None:
            slot = int(self.cslot[r])
            self.cs_vec[slot] -= old
            self.cs_norm[slot] = np.linalg.norm(self.cs_vec[slot])
        self.emb[r] = 0.0
        self.system[r] = True

    def _grow(self) -> None:
        """Double the rows and the conversation slots (up to the capacity), keeping all."""
        old = self._cap
        new = min(self._max_cap, old * 2)
        for name in (*_ROW_ARRAYS, *_SLOT_ARRAYS):
            arr = getattr(self, name)
            grown = np.full((new, *arr.shape[1:]), _FILL.get(name, 0), arr.dtype)
            grown[:old] = arr
            setattr(self, name, grown)
        self.cs_speakers.extend({} for _ in range(new - old))
        self.cs_addressed.extend([frozenset()] * (new - old))
        self._views()
        self._free = list(range(new - 1, old - 1, -1)) + self._free
        self._cap = new

    def _compact(self) -> None:
        """Drop all but the last ``2 * window`` rows (older ones can no longer be parents)."""
        keep = 2 * self.window
        cut = self.n - self.offset - keep
        for name in _ROW_ARRAYS:
            arr = getattr(self, name)
            arr[:keep] = arr[cut : cut + keep].copy()
        self._mentions = self._mentions[cut:]
        self._words = self._words[cut:]
        self.offset += cut
        live = set(self.cslot[:keep].tolist())
        self._free = [s for s in range(self._cap) if s not in live]
        # pair history only matters among people still around; forget the rest
        if sum(len(h) for h in self._pair_hist.values()) > _MAX_PAIRS:
            self._pair_hist.clear()
