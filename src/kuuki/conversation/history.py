"""The recent history of one channel as the disentangler keeps it, in flat numpy arrays.

:class:`ChannelHistory` holds one row per recent message (speaker ids, flags, embedding,
conversation slot, chosen parent) and one slot per conversation that still has a message
in the buffer, so that the features of a new message (`features.py`) come out of a
handful of vector operations. Rows start few and double as the channel talks; when full
they are compacted to the last ``2 * window``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kuuki.conversation import cues
from kuuki.conversation.speakers import Speakers
from kuuki.conversation.wordindex import WordIndex

FloatArray = npt.NDArray[np.float32]

# Bounds of one channel's state: ``capacity`` rows (512, compacted to the last 2 * window
# when full), as many conversation slots, and at most this many (speaker, addressee) counts.
# Speaker ids (the alias table) grow with the channel's distinct members, ~200 bytes each.
_MAX_PAIRS = 20_000
# The rows start at this many and double up to ``capacity`` as the channel talks: a bot in
# thousands of quiet channels must not hold half a megabyte of empty rows for each
# (the soak; a full state is ~0.55 MB at 128 dimensions).
_FIRST_ROWS = 32
_FILL = {"ids": -1, "parent_row": -1, "cs_root_spk": -1}
_SLOT_ARRAYS = (
    "cs_vec", "cs_norm", "cs_size", "cs_last", "cs_last_minute", "cs_id", "cs_nspk",
    "cs_root_spk",
)
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
# the columns of ChannelHistory.flags, named as the features they give a candidate
FLAG_COLUMNS = (
    "j_system", "q_j", "url_j", "j_addresses", "j_q_answered", "j_latest_of_speaker",
    "j_conv_latest",
)
# what a message says of itself: speaker id, leading addressee, the named ids, question,
# content words
Analysis = tuple[int, int, frozenset[int], bool, frozenset[str]]


@dataclass(slots=True)
class Post:
    """One message as the disentangler sees it: platform-neutral and index-free."""

    speaker: str
    text: str
    minute: float
    vector: FloatArray | None = None
    system: bool = False
    reply_to: int | None = None  # global index of the platform's explicit reply target
    mentions: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other names the speaker goes by (display name…)


class ChannelHistory:
    """Recent history of one channel, indexed by a global message counter.

    ``commit(turn, parent)`` records a message with its chosen parent so that later
    messages see the conversation structure; edits and deletes update it in place.
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
        self._word_index = WordIndex()  # the same words as ids, for counting shared ones
        self.speakers = Speakers()
        self._last_by_speaker: dict[int, int] = {}
        self._pair_hist: dict[int, dict[int, int]] = {}
        self._pending: tuple[Post, Analysis] | None = None

    def _alloc(self) -> None:
        cap = self._cap
        # per-row speaker ids and flags side by side, so that features() gathers each
        # group with one index and writes it with one assignment (see _views)
        self.ids = np.full((cap, 3), -1, np.int64)
        self.minute = np.zeros(cap, np.float64)
        self.flags = np.zeros((cap, len(FLAG_COLUMNS)), bool)
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
        ) = (self.flags[:, c] for c in range(len(FLAG_COLUMNS)))

    # -- speakers -------------------------------------------------------------------

    def speaker_id(self, name: str, aliases: tuple[str, ...] = ()) -> int:
        return self.speakers.id(name, aliases)

    def _analyse(self, turn: Post) -> Analysis:
        # features() and commit() both need this; compute it once per message
        if self._pending is not None and self._pending[0] is turn:
            return self._pending[1]
        me = self.speaker_id(turn.speaker, turn.aliases)
        lead, named = self.speakers.addressing(turn.text, turn.mentions, turn.system)
        q_i = (not turn.system) and cues.is_question(turn.text)
        words = cues.content_words(turn.text) if not turn.system else cues.NO_WORDS
        out = (me, lead, named, q_i, words)
        self._pending = (turn, out)
        return out

    # -- updates --------------------------------------------------------------------

    def conversation_id(self, index: int) -> int:
        """Conversation of a message still in the buffer (-1 if it has been dropped)."""
        if not self.offset <= index < self.n:
            return -1
        return int(self.cs_id[self.cslot[index - self.offset]])

    def commit(self, turn: Post, parent: int) -> int:
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
        vec = turn.vector if turn.vector is not None else self._zero
        self._write_row(r, turn, vec, (me, lead, named, q_i, words))
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
        slot = self._join(i, r, parent, me, vec)
        self.cs_last[slot] = i
        self.cs_last_minute[slot] = turn.minute
        centroid = self.cs_vec[slot]
        # what np.linalg.norm computes for a 1-d float32 vector, without its dispatch
        self.cs_norm[slot] = np.sqrt(centroid.dot(centroid))
        who = self.cs_speakers[slot]
        who[me] = who.get(me, 0) + 1
        self.cs_nspk[slot] = len(who)
        if named:
            self.cs_addressed[slot] = self.cs_addressed[slot] | named
        self.cslot[r] = slot
        self.n = i + 1
        return int(self.cs_id[slot])

    def _write_row(self, r: int, turn: Post, vec: FloatArray, analysis: Analysis) -> None:
        """The new message's own row (rows are reused after compaction: what later
        messages update is reset here)."""
        me, lead, named, q_i, words = analysis
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
        self.emb[r] = vec
        self._mentions.append(named)
        self._words.append(words)
        self._word_index.add(words)
        self.nset[r] = len(words)

    def _join(self, i: int, r: int, parent: int, me: int, vec: FloatArray) -> int:
        """The conversation slot of message ``i`` (row ``r``): its parent's, or a new one
        when it starts a conversation (or its parent has left the buffer)."""
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
        return slot

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
        self._word_index.rebuild(self._words)
        self.offset += cut
        live = set(self.cslot[:keep].tolist())
        self._free = [s for s in range(self._cap) if s not in live]
        # pair history only matters among people still around; forget the rest
        if sum(len(h) for h in self._pair_hist.values()) > _MAX_PAIRS:
            self._pair_hist.clear()
