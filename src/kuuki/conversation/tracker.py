"""Live conversation tracking for one channel, fed message by message by the engine.

The tracker runs the :class:`~kuuki.conversation.disentangler.Disentangler` online and
keeps what the rest of kuuki asks about: which conversation a message belongs to, who is
in it, which questions went unanswered,
and which message a reply should answer. Conversation ids are the id of the message that
started the conversation.
"""


from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from kuuki.conversation import cues
from kuuki.conversation.disentangler import DEFAULT_WINDOW, Disentangler
from kuuki.conversation.history import Post
from kuuki.conversation.live import BOT_KEY, Assignment, LiveConversation, Tracked
from kuuki.conversation.model import DisentanglerModel, shipped_model
from kuuki.conversation.questions import unanswered
from kuuki.domain import Message, User
from kuuki.embed import Embedder

# Messages remembered per channel; older ones are forgotten (with their conversations once
# empty). Everything the tracker keeps per channel is bounded by this or by the constants
# below: at ~1-2 KB a message that is a few MB per channel at most.
_MAX_MESSAGES = 1000
# ...and by their text: a message may be 20,000 characters (kuuki.text.safety.clean_incoming),
# so 1,000 of them could hold tens of MB. Past this many characters in all, the oldest
# messages go first, whatever their number (bound in messages and in bytes).
_MAX_TEXT_CHARS = 500_000
_MAX_THREADS = 1000  # threads whose latest message is remembered (for thread replies)


class ConversationTracker:
    """Online disentanglement of one channel (see module docstring)."""

    def __init__(
        self,
        channel_id: str,
        *,
        embedder: Embedder | None,
        model: DisentanglerModel | None = None,
        bot_names: Sequence[str] = (),
        window: int = DEFAULT_WINDOW,
        alive_seconds: float = 1800,
    ) -> None:
        self.channel_id = channel_id
        self.embedder = embedder
        self._addressed_cache: dict[str, bool] = {}
        self.bot_names = tuple(n for n in bot_names if n)
        self._folded_names = frozenset(n.casefold() for n in self.bot_names)
        self.alive_seconds = alive_seconds
        self._dis = Disentangler(
            model or shipped_model(),
            window=window,
            dim=embedder.dim if embedder is not None else 512,
        )
        self._dis.state.speaker_id(BOT_KEY, self.bot_names)
        self._seen: OrderedDict[str, Tracked] = OrderedDict()
        self._chars = 0  # characters of text in _seen
        # global index -> the message's record (what the link probabilities are summed by)
        self._by_index: dict[int, Tracked] = {}
        self._convs: dict[str, LiveConversation] = {}
        self._thread_last: dict[str, str] = {}
        self._bot_ids: set[str] = set()

    def know_user(self, user: User) -> None:
        """Register a channel member, so calling them by name counts before they speak."""
        if self._is_ours(user):
            self._bot_ids.add(user.id)
            self._dis.state.speaker_id(BOT_KEY, (user.id, user.name))
        else:
            self._dis.state.speaker_id(user.id, (user.name,))

    # -- feeding --------------------------------------------------------------------

    def is_bot(self, msg: Message) -> bool:
        """Is this one of our own messages (by name, or a bot user we already know)?"""
        return self._is_ours(msg.user)

    def _is_ours(self, user: User) -> bool:
        names = self._folded_names
        return (
            user.id in self._bot_ids or user.name.casefold() in names or user.id.casefold() in names
        )

    def observe(self, msg: Message) -> Assignment:
        """Link a new message to its conversation (each message is embedded once, here)."""
        if msg.id in self._seen:
            return self._assignment(self._seen[msg.id])
        ours = self.is_bot(msg)
        if ours:
            self._bot_ids.add(msg.user.id)
        speaker = BOT_KEY if ours else msg.user.id
        # a vector of its own, kept for the message's life here: row 0 of the (1, dim)
        # array embed returns would keep that array and a second header alive with it
        vec = self.embedder.embed([msg.text])[0].copy() if self.embedder is not None else None
        mentions = list(msg.mentions)
        if not ours and cues.calls_name(msg.text, self.bot_names):
            mentions.insert(0, BOT_KEY)
        turn = Post(
            speaker=speaker,
            text=msg.text,
            minute=msg.ts.timestamp() / 60.0,
            vector=vec,
            reply_to=self._explicit_parent(msg),
            mentions=tuple(mentions),
            aliases=(msg.user.id, msg.user.name),
        )
        cand, probs = self._dis.score(turn)
        mass: dict[str, float] = {}
        by_index = self._by_index  # _conv_of_index, inlined: 50 a message
        # operators rather than dict.get: the same sums, no method call per candidate
        for c, p in zip(cand[1:].tolist(), probs[1:].tolist(), strict=True):
            if c in by_index:
                cid = by_index[c].conversation_id
                if cid in mass:
                    mass[cid] += p
                else:
                    mass[cid] = p
        link = self._dis.decide(turn, cand, probs, forced_parent=turn.reply_to)
        parent = by_index.get(link.parent) if link.parent != link.index else None
        if parent is None:
            parent_id = None
            conv_id = msg.id
            conf = float(probs[0]) if turn.reply_to is None else 1.0
        else:
            parent_id = parent.msg.id
            conv_id = parent.conversation_id
            conf = link.confidence if turn.reply_to is None else 1.0
        seen = Tracked(msg, link.index, conv_id, parent_id, speaker, mass, vec)
        self._remember(seen)
        if msg.thread:
            self._thread_last.pop(msg.thread, None)  # re-insert: most recent last
            self._thread_last[msg.thread] = msg.id
            if len(self._thread_last) > _MAX_THREADS:
                del self._thread_last[next(iter(self._thread_last))]
        return Assignment(msg.id, conv_id, parent_id, conf)

    def _explicit_parent(self, msg: Message) -> int | None:
        target = msg.reply_to
        if target is None and msg.thread and msg.thread != msg.id:
            target = self._thread_last.get(msg.thread, msg.thread)
        seen = self._seen.get(target) if target is not None else None
        return seen.index if seen is not None else None

    def _conv_of_index(self, index: int) -> str | None:
        seen = self._by_index.get(index)
        return seen.conversation_id if seen is not None else None

    def _remember(self, seen: Tracked) -> None:
        msg = seen.msg
        self._seen[msg.id] = seen
        self._by_index[seen.index] = seen
        conv = self._convs.get(seen.conversation_id)
        if conv is None:
            conv = LiveConversation(seen.conversation_id, [], [], msg.ts, msg.ts)
            self._convs[seen.conversation_id] = conv
        conv.message_ids.append(msg.id)
        if msg.user.id not in conv.participants:
            conv.participants.append(msg.user.id)
        conv.last_activity = max(conv.last_activity, msg.ts)
        if seen.vector is not None:
            self._add_topic(conv, seen.vector, 1.0)
        self._chars += len(msg.text)
        while len(self._seen) > _MAX_MESSAGES or (
            self._chars > _MAX_TEXT_CHARS and len(self._seen) > 1
        ):
            _, old = self._seen.popitem(last=False)
            self._chars -= len(old.msg.text)
            self._by_index.pop(old.index, None)
            c = self._convs.get(old.conversation_id)
            if c is not None and c.message_ids and c.message_ids[0] == old.msg.id:
                c.message_ids.pop(0)
                if not c.message_ids:
                    del self._convs[old.conversation_id]

    @staticmethod
    def _add_topic(conv: LiveConversation, vec: npt.NDArray[np.float32], sign: float) -> None:
        total = conv._topic_sum if conv._topic_sum is not None else np.zeros_like(vec)
        total = total + sign * vec
        conv._topic_sum = total
        norm = float(np.sqrt(total.dot(total)))  # np.linalg.norm's sum for a 1-d vector
        conv.topic = (total / norm).astype(np.float32) if norm > 1e-6 else None

    def _assignment(self, seen: Tracked) -> Assignment:
        return Assignment(seen.msg.id, seen.conversation_id, seen.parent_id, 1.0)

    # -- edits ----------------------------------------------------------------------

    def edit(self, message_id: str, text: str) -> None:
        """Take a new text into account for topic and cues; links are not revisited."""
        seen = self._seen.get(message_id)
        if seen is None:
            return
        self._chars += len(text) - len(seen.msg.text)
        seen.msg = dataclasses.replace(seen.msg, text=text, edited=True)
        if self.embedder is None:
            return
        new = self.embedder.embed([text])[0]
        conv = self._convs.get(seen.conversation_id)
        if conv is not None:
            if seen.vector is not None:
                self._add_topic(conv, seen.vector, -1.0)
            self._add_topic(conv, new, 1.0)
        self._dis.state.replace_vector(seen.index, new, seen.vector)
        seen.vector = new

    def delete(self, message_id: str) -> None:
        """Forget a message: it leaves its conversation and can no longer be replied to."""
        seen = self._seen.get(message_id)
        if seen is None:
            return
        seen.msg = dataclasses.replace(seen.msg, deleted=True)
        conv = self._convs.get(seen.conversation_id)
        if conv is not None and message_id in conv.message_ids:
            conv.message_ids.remove(message_id)
            if seen.vector is not None:
                self._add_topic(conv, seen.vector, -1.0)
            if not conv.message_ids:
                del self._convs[seen.conversation_id]
        self._dis.state.retire(seen.index, seen.vector)

    # -- queries --------------------------------------------------------------------

    def conversation_of(self, message_id: str) -> str | None:
        seen = self._seen.get(message_id)
        return seen.conversation_id if seen is not None else None

    def conversation(self, conversation_id: str) -> LiveConversation | None:
        return self._convs.get(conversation_id)

    def alive(self, now: datetime) -> list[LiveConversation]:
        """Conversations active within ``alive_seconds`` of ``now``, most recent first."""
        since = now - timedelta(seconds=self.alive_seconds)
        live = [c for c in self._convs.values() if c.last_activity >= since]
        return sorted(live, key=lambda c: c.last_activity, reverse=True)

    def messages(self, conversation_id: str) -> list[Message]:
        conv = self._convs.get(conversation_id)
        if conv is None:
            return []
        return [self._seen[m].msg for m in conv.message_ids if m in self._seen]

    def vector_of(self, message_id: str) -> npt.NDArray[np.float32] | None:
        """The message's sentence vector, as embedded once when observed (None: unknown)."""
        seen = self._seen.get(message_id)
        return seen.vector if seen is not None else None

    def embed_words(self, texts: Sequence[str]) -> npt.NDArray[np.float32] | None:
        """Vectors of a few words by the channel's embedder (None when it has none)."""
        return self.embedder.embed(list(texts)) if self.embedder is not None else None

    def same_conversation(self, conversation_id: str | None, message_id: str) -> tuple[bool, float]:
        """Does the message continue ``conversation_id``? With the model's confidence."""
        seen = self._seen.get(message_id)
        if seen is None or conversation_id is None:
            return False, 1.0 if conversation_id is None else 0.0
        mass = seen.mass.get(conversation_id, 0.0)
        if seen.conversation_id == conversation_id:
            return True, 1.0 if message_id == conversation_id else mass
        return False, 1.0 - mass

    def _addressed(self, msg: Message) -> bool:
        hit = self._addressed_cache.get(msg.id)
        if hit is None:
            hit = bool(cues.addressees(msg.text))
            self._addressed_cache[msg.id] = hit
            if len(self._addressed_cache) > 4096:
                self._addressed_cache.pop(next(iter(self._addressed_cache)))
        return hit

    def unanswered_questions(self, now: datetime, min_age_s: float) -> list[Message]:
        """Questions to the room (no addressee, or the bot) nobody else answered yet."""
        return unanswered(
            self._seen,
            now=now,
            since=now - timedelta(seconds=self.alive_seconds),
            min_age_s=min_age_s,
            bot_names=self.bot_names,
            bot_ids=self._bot_ids,
            addressed=self._addressed,
        )

    def reply_target(self, conversation_id: str) -> str | None:
        """The latest human message of the conversation, preferring an open question."""
        msgs = [
            m
            for m in self.messages(conversation_id)
            if not m.deleted and self._seen[m.id].speaker != BOT_KEY
        ]
        if not msgs:
            return None
        last = msgs[-1]
        if not cues.is_question(last.text) and not cues.is_thanks(last.text):
            for m in reversed(msgs[-3:]):
                if cues.is_question(m.text) and m.user.id == last.user.id:
                    return m.id
        return last.id
