"""The MRMP reader: @-marks removed, labels kept, clear errors on a bad file."""

import json
from pathlib import Path

import pytest

from kuuki.conversation.mrmp import CorpusError, read_dialogue, read_split, strip_marks


def test_marks_are_removed_wherever_they_are() -> None:
    names = ["うさぎ", "ポテト"]
    assert strip_marks("@うさぎ 運動は苦手ですね…", names) == "運動は苦手ですね…"
    assert strip_marks("@うさぎ\u3000今は？", names) == "今は？"
    assert strip_marks("小型犬です @ポテト ", names) == "小型犬です"
    assert strip_marks("メール@example", names) == "メール@example"


def test_a_dialogue_file_is_read_with_its_labels(tmp_path: Path) -> None:
    f = tmp_path / "X00101.json"
    f.write_text(json.dumps({
        "dialogue_id": "X00101", "dialogue_type": "Family", "interlocutors": ["a", "b", "c"],
        "utterances": [
            {"utterance_id": 0, "interlocutor_id": "a", "text": "hi", "mention_to": []},
            {"utterance_id": 1, "interlocutor_id": "b", "text": "@a yes", "mention_to": ["a"]},
        ],
    }), encoding="utf-8")
    d = read_dialogue(f)
    assert d.speakers == ("a", "b", "c")
    assert [(u.speaker, u.text, u.mention_to) for u in d.utterances] == [
        ("a", "hi", ()), ("b", "yes", ("a",))]


def test_a_bad_file_names_itself_and_the_field(tmp_path: Path) -> None:
    f = tmp_path / "bad.json"
    f.write_text(json.dumps({"dialogue_id": "x", "interlocutors": ["a"],
                             "utterances": [{"interlocutor_id": "z", "text": ""}]}))
    with pytest.raises(CorpusError, match=r"bad\.json.*utterances\[0\]\.interlocutor_id"):
        read_dialogue(f)
    with pytest.raises(CorpusError, match="no MRMP dialogue files"):
        read_split(tmp_path / "nothing")


def test_the_dev_split_reads_without_marks(mrmp_data: Path) -> None:
    dev = read_split(mrmp_data / "dialogues" / "dev")
    assert len(dev) == 85
    labelled = [u for d in dev for u in d.utterances if u.mention_to]
    assert labelled and not any(u.text.startswith("@") for u in labelled)
