"""Reading the Multi-Relational Multi-Party Chat Corpus (MRMP): real Japanese three-person
text chats, each message with the people it is @-addressed to (``mention_to``).

The corpus (nu-dialogue/multi-relational-multi-party-chat-corpus, CC BY-SA 4.0; see
docs/decisions.md) marks an addressed message by starting it with ``@name `` (a few put
it at the end). Those marks are removed here, as the addressee models and their
evaluation require: a member of a chat without ``@`` infers who a message is for from the
conversation, and so must kuuki. ``mention_to`` stays as the label.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kuuki.errors import KuukiError


class CorpusError(KuukiError):
    """A corpus file kuuki cannot read: the message names the file and what is wrong."""


@dataclass(frozen=True, slots=True)
class Utterance:
    index: int
    speaker: str
    text: str  # the @-marks removed
    mention_to: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Dialogue:
    id: str
    kind: str  # "First time" (strangers) or "Family"
    speakers: tuple[str, ...]
    utterances: tuple[Utterance, ...]


def strip_marks(text: str, names: Sequence[str]) -> str:
    """``text`` without ``@name`` marks for any of ``names`` (and the space after them)."""
    if "@" not in text and "＠" not in text:
        return text
    alt = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    if not alt:
        return text
    return re.sub(rf"[@＠](?:{alt})[\s\u3000]*", "", text).strip()


def read_dialogue(path: Path) -> Dialogue:
    """One dialogue file; a clear error naming the file and field when it is malformed."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        speakers = tuple(str(s) for s in raw["interlocutors"])
        out: list[Utterance] = []
        for n, u in enumerate(raw["utterances"]):
            speaker = str(u["interlocutor_id"])
            if speaker not in speakers:
                raise ValueError(f"utterances[{n}].interlocutor_id {speaker!r} is not listed")
            mention_to = tuple(str(x) for x in u.get("mention_to") or ())
            out.append(Utterance(n, speaker, strip_marks(str(u["text"]), speakers), mention_to))
        return Dialogue(str(raw["dialogue_id"]), str(raw.get("dialogue_type", "")), speakers,
                        tuple(out))
    except (OSError, KeyError, TypeError, ValueError, RecursionError) as exc:
        # JSONDecodeError is a ValueError; the decoder recurses once per level of nesting
        what = f"missing field {exc}" if isinstance(exc, KeyError) else (
            "nested too deeply" if isinstance(exc, RecursionError) else str(exc))
        raise CorpusError(f"{path}: not an MRMP dialogue file: {what}") from exc


def read_split(directory: Path) -> list[Dialogue]:
    """Every ``*.json`` dialogue under ``directory`` (a split folder, or the corpus's
    ``dialogues`` folder, or the corpus root), in file-name order."""
    root = directory / "dialogues" if (directory / "dialogues").is_dir() else directory
    files = sorted(root.rglob("*.json"))
    if not files:
        raise CorpusError(f"{directory}: no MRMP dialogue files (*.json) found")
    return [read_dialogue(f) for f in files]
