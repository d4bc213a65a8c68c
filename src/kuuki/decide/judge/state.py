"""Conversation state (seed 001): ENDING, MISUNDERSTANDING, CONFLICT or ACTIVE, locally.

The seed asks an LLM on every message; here a local classifier answers first, from
lexical cues (ja + en) over the last few human messages, weighted towards the newest, and
from sentence embeddings compared with a handful of prototype lines per state. It returns
a confidence; only when that is low does the LLM stage ask the model (prompt ``state.j2``).

Priority follows the seed: ENDING first, then MISUNDERSTANDING, then CONFLICT, else ACTIVE.
A topic change alone is not ENDING; a heated but constructive debate is ACTIVE.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kuuki.domain import Message
from kuuki.embed import Embedder
from kuuki.text.folded import Folded


class ConvState(enum.StrEnum):
    ACTIVE = "active"
    ENDING = "ending"
    MISUNDERSTANDING = "misunderstanding"
    CONFLICT = "conflict"


@dataclass(frozen=True, slots=True)
class StateResult:
    state: ConvState
    confidence: float
    source: str  # "cues" | "embedding" | "cues+embedding" | "default" | "llm" | "fail-safe"
    detail: str = ""


_ENDING = re.compile(
    r"\b(bye|goodbye|bye-bye|see (you|ya)|good ?night|gotta go|g2g|gtg|ttyl|cya|signing off"
    r"|i'?m off|heading (out|off|home)|logging off|that'?s all( for (today|now))?"
    r"|talk (to you )?later|catch you later|until next time|calling it a (day|night)"
    r"|let'?s wrap (it )?up|have a good (one|night|evening|weekend))\b"
    r"|おやすみ|またね|また明日|またあした|じゃあね|じゃあまた|ではでは|ではまた|落ちます|落ちるね"
    r"|お先に|失礼します|以上です|以上になります|これで終わり|ばいばい|バイバイ|寝ます|寝るね"
    r"|おつかれさまでした|お疲れさまでした|お疲れ様でした",
    re.IGNORECASE,
)
_MISUNDERSTANDING = re.compile(
    r"\b(that'?s not what i (said|meant)|i didn'?t (say|mean) that|you misunderstood"
    r"|misunderstand|misunderstanding|you'?re assuming|you are assuming|no,? i meant"
    r"|that'?s not the point|i never said|we'?re talking (past|about different)"
    r"|wait,? (what|you mean)|you think i)\b"
    r"|誤解|勘違い|そういう意味じゃ|そういう意味では|そうじゃなくて|そうではなく|言ってない"
    r"|言ってません|決めつけ|決め付け|話が噛み合|噛み合ってない|かみあってない|伝わってない",
    re.IGNORECASE,
)
_CONFLICT = re.compile(
    r"\b(shut up|stupid|idiot|ridiculous|nonsense|bullshit|you always|you never|how dare"
    r"|are you serious|you'?re wrong|sick of|fed up|unacceptable|not my fault|your fault"
    r"|blam(e|ing)|pathetic|whatever,|give me a break|i'?m done with)\b"
    r"|ふざけ|いい加減に|うるさい|バカ|馬鹿|黙って|ありえない|あり得ない|意味わからん|お前のせい"
    r"|あなたのせい|最悪|むかつ|ムカつ|何様|キレ|いつもそう|ちゃんとしろ|文句",
    re.IGNORECASE,
)
_SHOUT = re.compile(r"[!！]{2,}|[?？][!！]|[!！][?？]")

PROTOTYPES: dict[ConvState, tuple[str, ...]] = {
    ConvState.ENDING: (
        "ok, I'm heading off now, see you tomorrow",
        "thanks everyone, that's all for today",
        "good night all",
        "じゃあ今日はこのへんで、お疲れさまでした",
        "そろそろ寝ます、おやすみー",
        "また明日ね",
    ),
    ConvState.MISUNDERSTANDING: (
        "no, that's not what I meant at all",
        "I think you misunderstood my point",
        "wait, are we talking about the same thing?",
        "いや、そういう意味じゃなくて",
        "なんか話が噛み合ってない気がする",
        "それ勘違いしてると思う",
    ),
    ConvState.CONFLICT: (
        "this is ridiculous, you never listen",
        "stop blaming me for your mistakes",
        "are you serious? that's a stupid idea",
        "いい加減にしてよ、いつもそうじゃん",
        "ふざけないで、あなたのせいでしょ",
        "何様のつもり？",
    ),
    ConvState.ACTIVE: (
        "has anyone tried the new version yet?",
        "I think we should use the other library for this",
        "lunch plans today?",
        "新しいバージョンもう試した？",
        "この設定でいいと思う",
        "今日のお昼どうする？",
    ),
}

_CUES = (
    (ConvState.ENDING, Folded(_ENDING)),
    (ConvState.MISUNDERSTANDING, Folded(_MISUNDERSTANDING)),
    (ConvState.CONFLICT, Folded(_CONFLICT)),
)
_MEMO_SIZE = 4096
# Newest message counts most: a "bye" three messages ago does not end a live conversation.
_WEIGHTS = (1.0, 0.6, 0.4, 0.3, 0.2)


class StateClassifier:
    """Local state classifier: lexical cues plus optional embedding prototypes."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder
        # the embedder's own cosine scale (USE: 0.45, the static table: 0.55)
        self._related = embedder.related if embedder is not None else 1.0
        self._protos: Any = None
        self._labels: list[ConvState] = []
        self._groups: list[tuple[ConvState, Any]] = []  # label -> prototype rows
        self._order: Any = None
        self._starts: Any = None
        self._cue_memo: dict[str, tuple[tuple[tuple[ConvState, str], ...], bool, bool]] = {}
        # Embed the prototypes now, not on the first message's clock.
        self._prototypes()

    def _prototypes(self) -> Any:
        if self._protos is None and self.embedder is not None:
            texts: list[str] = []
            for state, lines in PROTOTYPES.items():
                texts.extend(lines)
                self._labels.extend([state] * len(lines))
            self._protos = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        return self._protos

    def classify(self, conversation: Sequence[Message]) -> StateResult:
        humans = [m for m in conversation if not m.user.is_bot][-5:]
        if not humans:
            return StateResult(ConvState.ACTIVE, 0.9, "default", "no human messages")
        newest_first = list(reversed(humans))
        evidence = {state: 0.0 for state in ConvState}
        hits: list[str] = []
        for weight, m in zip(_WEIGHTS, newest_first, strict=False):
            cues, shout, _ = self._cues(m.text)
            for state, found in cues:
                evidence[state] += weight
                hits.append(f"{state.value}:{found!r}")
            if shout:
                evidence[ConvState.CONFLICT] += 0.25 * weight
        # Ending only counts from the last two messages: it is about what happens now.
        if not any(self._cues(m.text)[2] for m in newest_first[:2]):
            evidence[ConvState.ENDING] = 0.0
        newest = newest_first[0].text
        emb = self._embedding_vote(newest) if _long_enough(newest) else None
        if emb is not None:
            state, sim, margin = emb
            related = self._related
            if state is not ConvState.ACTIVE and sim >= related:
                # Alone, an embedding only makes the classifier unsure (so the LLM stage may
                # ask); together with a cue it makes it surer.
                evidence[state] += min(0.4, (sim - (related - 0.10)) * 2 + margin)
            hits.append(f"nearest {state.value} {sim:.2f} (margin {margin:.2f})")
        return self._decide(evidence, hits, emb is not None)

    def _cues(self, text: str) -> tuple[tuple[tuple[ConvState, str], ...], bool, bool]:
        """(state, matched text) per cue pattern, shouting, ending: memoised per text.

        A message is read again in each of the next few windows; its cues never change.
        """
        got = self._cue_memo.get(text)
        if got is None:
            found = []
            for state, pattern in _CUES:
                match = pattern.find(text)
                if match is not None:
                    found.append((state, match))
            ending = any(state is ConvState.ENDING for state, _ in found)
            got = (tuple(found), _SHOUT.search(text) is not None, ending)
            if len(self._cue_memo) >= _MEMO_SIZE:
                self._cue_memo.clear()
            self._cue_memo[text] = got
        return got

    def _decide(
        self, evidence: dict[ConvState, float], hits: list[str], used_embedding: bool
    ) -> StateResult:
        detail = "; ".join(hits)
        source = "cues+embedding" if used_embedding else "cues"
        for state in (ConvState.ENDING, ConvState.MISUNDERSTANDING, ConvState.CONFLICT):
            strength = evidence[state]
            threshold = 0.6 if state is not ConvState.CONFLICT else 0.8
            if strength >= threshold:
                return StateResult(state, min(0.95, 0.55 + strength * 0.3), source, detail)
        top = max(evidence[s] for s in ConvState if s is not ConvState.ACTIVE)
        if top == 0.0:
            return StateResult(ConvState.ACTIVE, 0.85, source, detail or "no cues")
        # Some evidence, not enough: still ACTIVE, but say we are unsure.
        return StateResult(ConvState.ACTIVE, max(0.3, 0.8 - top), source, detail)

    def _embedding_vote(self, text: str) -> tuple[ConvState, float, float] | None:
        if self.embedder is None or not text.strip():
            return None
        try:
            protos = self._prototypes()
            vec = np.asarray(self.embedder.embed([text]), dtype=np.float32)[0]
        except Exception:  # embeddings are a bonus, never a failure
            return None
        sims = protos @ vec
        if not self._groups:
            order = list(dict.fromkeys(self._labels))  # first appearance: ties rank alike
            self._groups = [
                (st, np.array([i for i, lab in enumerate(self._labels) if lab is st]))
                for st in order
            ]
            # Each label's rows side by side: one reduceat gives every label's best.
            self._order = np.concatenate([rows for _, rows in self._groups])
            sizes = [len(rows) for _, rows in self._groups]
            self._starts = np.cumsum([0, *sizes[:-1]])
        tops = np.maximum.reduceat(sims[self._order], self._starts).tolist()
        best = [(label, max(-1.0, top)) for (label, _), top in zip(self._groups, tops, strict=True)]
        ranked = sorted(best, key=lambda kv: kv[1], reverse=True)
        (state, sim), (_, second) = ranked[0], ranked[1]
        return state, sim, sim - second


def _long_enough(text: str) -> bool:
    """Short salutations ("morning", "お疲れ") all embed alike; only longer lines are compared."""
    t = text.strip()
    return len(t.split()) >= 4 if t.isascii() else len(t) >= 10


def parse_state(value: Any) -> ConvState | None:
    """A state name from a model's answer (any case, extra words ignored)."""
    if not isinstance(value, str):
        return None
    head = value.strip().upper()
    for state in (
        ConvState.ENDING,
        ConvState.MISUNDERSTANDING,
        ConvState.CONFLICT,
        ConvState.ACTIVE,
    ):
        if head.startswith(state.value.upper()):
            return state
    return None
