"""What the first readings after a run of unread lines no longer redo: the cues of the
lines read as they arrived (kuuki.decide.addressing.reading.RoomReader.cue), the first
round of a reply whose parent index moved with the window
(kuuki.decide.models.firstround), the per-turn caches' live entries when they fill."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from kuuki.decide.addressing.reading import RoomReader
from kuuki.decide.models import cues as cue_module
from kuuki.decide.models.addressee import AddresseeModel
from kuuki.decide.models.content import ContentCache
from kuuki.decide.models.cues import CueCache
from kuuki.decide.models.features import Context
from kuuki.decide.models.firstround import FloatArray, Prepared
from kuuki.decide.models.turns import Turn

from ..conftest import Room, msg

NAMES = {"kuu": ["kuu", "Kuu"], "bob": ["bob"], "amy": ["amy"], "eve": ["eve"],
         "dan": ["dan"]}
ALWAYS = ("kuu",)
LINES = [
    ("bob", "my wifi keeps dropping since the upgrade"), ("amy", "which card is it"),
    ("bob", "an intel one, iwlwifi"), ("eve", "morning all"), ("dan", "hi eve"),
    ("amy", "bob: try turning off power saving"), ("bob", "how do i do that"),
    ("eve", "dan did you get the printer working"), ("dan", "not yet, cups hates me"),
    ("amy", "iwconfig wlan0 power off"), ("bob", "ok trying"), ("eve", "dan: reinstall cups"),
    ("dan", "will do"), ("bob", "amy: that fixed it, thanks"), ("amy", "np"),
    ("eve", "anyone on 24.04 yet"), ("dan", "me, it is fine"), ("bob", "still on 22.04"),
    ("eve", "upgrading tonight then"), ("amy", "back up first"), ("dan", "printer works now"),
    ("eve", "nice"), ("bob", "amy, should i keep power saving off"), ("amy", "yes for now"),
    ("dan", "eve what desktop do you use"), ("eve", "kde"), ("bob", "gnome here"),
]


def chat() -> list[Turn]:
    return [Turn(s, t, 30.0 * k) for k, (s, t) in enumerate(LINES)]


def probabilities(model: AddresseeModel, turns: list[Turn]) -> dict[str, float]:
    return model.predict(turns, len(turns) - 1, NAMES, ALWAYS).candidates


class NothingKept(Prepared):
    """The model as it was: a reply's first round is made again by every reading."""

    def take(self, ctx: Context, keys: Sequence[str], always: Sequence[str]
             ) -> FloatArray | None:
        return None


def test_a_reply_whose_parent_moves_with_the_window_has_its_first_round_made_once() -> None:
    # A reading's list starts further on with each message, so a reply's parent index
    # (and its Turn) changes from one reading to the next, with the same meaning.
    turns = chat()
    turns[22] = replace(turns[22], parent=13)  # bob answers amy's fix
    later = [replace(t, parent=t.parent - 2) if t.parent is not None else t
             for t in turns[2:]]
    kept, unaided = AddresseeModel.shipped(), AddresseeModel.shipped()
    unaided.replies = NothingKept()
    assert probabilities(kept, turns) == probabilities(unaided, turns)  # to the last bit
    assert probabilities(kept, later) == probabilities(unaided, later)
    assert kept.replies.taken == 1  # the reply's, not made again


def test_a_reply_whose_window_changed_has_its_first_round_made_again() -> None:
    turns = chat()
    turns[22] = replace(turns[22], parent=13)
    kept, unaided = AddresseeModel.shipped(), AddresseeModel.shipped()
    unaided.replies = NothingKept()
    assert probabilities(kept, turns) == probabilities(unaided, turns)
    edited = [replace(t, parent=t.parent - 2) if t.parent is not None else t
              for t in turns[2:]]
    edited[18] = replace(edited[18], text="printer works now, eve was right")
    assert probabilities(kept, edited) == probabilities(unaided, edited)
    assert kept.replies.taken == 0  # the edit is in the reply's window: made again


STATEMENTS = [
    ("bob", "my wifi keeps dropping since the upgrade"), ("amy", "an intel card probably"),
    ("bob", "yes, iwlwifi"), ("eve", "morning all"), ("dan", "hi eve"),
    ("amy", "bob: turn off power saving"), ("bob", "ok, trying that"),
    ("eve", "the printer is broken again"), ("dan", "cups hates me too"),
    ("amy", "iwconfig wlan0 power off"), ("bob", "that fixed it"), ("eve", "reinstalling cups"),
]


def test_unread_lines_have_their_cues_read_as_they_arrive(
        monkeypatch: pytest.MonkeyPatch) -> None:
    room = Room()
    for k, (who, text) in enumerate(STATEMENTS):
        room.add(msg(f"m{k}", 30.0 * k, who, text))
    question = msg("q", 400.0, "dan", "does anyone know why cups keeps crashing?")
    unread = [room.situation(m) for m in room.recent]
    fresh = RoomReader(["Kuu"]).read(room.situation(question))
    reader = RoomReader(["Kuu"])
    for s in unread:
        assert not reader.read(s).read  # nobody asked the room anything: not read
    made: list[str] = []
    cues_of = cue_module._cues

    def counted(turn: Turn) -> cue_module.TurnCues:
        made.append(turn.text)
        return cues_of(turn)

    monkeypatch.setattr(cue_module, "_cues", counted)
    reading = reader.read(room.situation(question))
    assert reading.read and reading.addressee.candidates == fresh.addressee.candidates
    assert made == [question.text]  # the question's own; the lines before it were read


def test_a_full_cue_cache_keeps_its_newest_turns() -> None:
    cache = CueCache(size=8)
    turns = [Turn("bob", f"line {k} about the printer", float(k)) for k in range(9)]
    first = [cache.cues(t) for t in turns[:8]]
    assert cache.named(turns[7], "bob", {"bob": ["bob"]}) == 0
    cache.cues(turns[8])  # full: the oldest quarter goes, the newest stay
    assert cache.cues(turns[7]) is first[7]
    assert cache.cues(turns[0]) is not first[0]  # made again
    texts = ContentCache(size=8)
    kept = [texts.text(t) for t in turns[:8]]
    texts.text(turns[8])
    assert texts.text(turns[7]) is kept[7] and texts.text(turns[0]) is not kept[0]
