"""The learned models' commands and training (issue 25): `kuuki addressee FILE`,
`kuuki eval addressee`, `kuuki train addressee|seat`, and the shipped weights."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from kuuki.cli import main
from kuuki.decide.models.addressee import ROOM, AddresseeModel
from kuuki.decide.models.features import ADDRESSEE_FEATURES
from kuuki.decide.models.seat import SEAT_FEATURES, SeatModel
from kuuki.decide.training import learn
from kuuki.decide.training.evaluate import measure_speed
from kuuki.testing.corpora import require

TRANSCRIPT = [
    {"setup": {"bot": "Kuu", "aliases": ["くう"]}},
    {"id": "m1", "t": 0, "user": "alice", "text": "morning all"},
    {"id": "m2", "t": 30, "user": "bob", "text": "morning alice"},
    {"id": "m3", "t": 50, "user": "alice", "text": "bob, did you try the new kernel?"},
    {"id": "m4", "t": 70, "user": "bob", "text": "yes, it boots fine here"},
    {"id": "m5", "t": 90, "user": "alice", "text": "Kuu: can you check the changelog?"},
    {"id": "m6", "t": 110, "user": "Kuu", "text": "sure, one moment"},
    {"id": "m7", "t": 119, "user": "bob", "text": "thanks", "reply_to": "m6"},
]


@pytest.fixture
def small_data(tmp_path: Path, corpora: Path) -> Path:
    """Three MRMP train dialogues and one IRC train log, copied to a folder of their own."""
    mrmp = require(corpora / "mrmp" / "dialogues" / "train", "the MRMP corpus")
    irc = require(corpora / "irc-disentanglement" / "train",
                  "the Ubuntu IRC disentanglement corpus")
    (tmp_path / "mrmp").mkdir()
    (tmp_path / "irc").mkdir()
    labelled = [f for f in sorted(mrmp.glob("*.json"))[:40]
                if any(u["mention_to"] for u in json.loads(f.read_text())["utterances"])]
    for f in labelled[:3]:  # some groups never wrote @: three that did
        shutil.copy(f, tmp_path / "mrmp" / f.name)
    log = sorted(irc.glob("*.ascii.txt"))[0]
    for f in (log, log.with_name(log.name.replace(".ascii.", ".annotation."))):
        shutil.copy(f, tmp_path / "irc" / f.name)
    return tmp_path


def test_the_shipped_weights_load_and_fit_the_features() -> None:
    a, s = AddresseeModel.shipped(), SeatModel.shipped()
    assert a.second.shape == (len(ADDRESSEE_FEATURES),) and np.isfinite(a.second).all()
    assert s.w_p.shape == (len(SEAT_FEATURES),) and np.isfinite(s.w_short).all()
    # a name that opens the message is strong evidence for that person
    assert a.second[ADDRESSEE_FEATURES.index("name_lead")] > 0


def test_addressee_command_prints_one_json_line_per_message(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in TRANSCRIPT) + "\n")
    assert main(["addressee", str(path)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["id"] for x in lines] == ["m1", "m2", "m3", "m4", "m5", "m6", "m7"]
    for x in lines:
        assert set(x) == {"id", "to", "p", "candidates"}
        assert "Kuu" in x["candidates"] or x["id"] == "m6"  # the persona, but not to itself
        assert ROOM in x["candidates"]
        assert sum(x["candidates"].values()) == pytest.approx(1.0, abs=1e-3)
        assert x["p"] == max(x["candidates"].values())
    to = {x["id"]: x["to"] for x in lines}
    assert (to["m2"], to["m3"], to["m4"], to["m5"]) == ("alice", "bob", "alice", "Kuu")
    assert to["m7"] == "Kuu"  # a platform reply to the bot's message


def test_a_bad_transcript_line_names_the_file_and_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "m1", "t": 0, "user": "alice", "text": "hi"}\nnot json\n')
    assert main(["addressee", str(path)]) == 2
    assert "bad.jsonl" in capsys.readouterr().err


def test_training_is_deterministic(small_data: Path) -> None:
    chats = learn.load_chats(small_data / "irc", small_data / "mrmp")
    one = learn.train_addressee(chats)
    two = learn.train_addressee(learn.load_chats(small_data / "irc", small_data / "mrmp"))
    assert np.array_equal(one.first, two.first) and np.array_equal(one.second, two.second)
    s1, s2 = learn.train_seat(one, chats), learn.train_seat(two, chats)
    assert np.array_equal(s1.w_p, s2.w_p) and np.array_equal(s1.w_short, s2.w_short)


def test_train_and_eval_commands_write_weights_and_print_scores(
        small_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    weights = tmp_path / "a.npz"
    dirs = ["--irc", str(small_data / "irc"), "--mrmp", str(small_data / "mrmp")]
    assert main(["train", "addressee", *dirs, "--out", str(weights)]) == 0
    trained = AddresseeModel.load(weights)
    again = learn.train_addressee(learn.load_chats(small_data / "irc", small_data / "mrmp"))
    assert np.array_equal(trained.second, again.second)
    capsys.readouterr()
    assert main(["eval", "addressee", str(small_data / "mrmp"), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["corpus"] == "mrmp" and row["messages"] > 0
    assert 0.0 <= row["previous_other"] <= 1.0 and 0.0 <= row["accuracy"] <= 1.0
    assert row["chance"] == pytest.approx(1 / 3, abs=0.01)  # two people and the room


def test_eval_refuses_a_folder_of_neither_corpus(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "addressee", str(tmp_path)]) == 2
    assert "neither an IRC split" in capsys.readouterr().err


def test_speed_measures_every_message_of_a_sliding_buffer(small_data: Path) -> None:
    chat = learn.load_chats(None, small_data / "mrmp")[0]
    s = measure_speed(chat, messages=60, buffer=50)
    assert s.messages == 60
    assert 0 < s.median_us <= s.p99_us and s.loop_20m_s > 0


def test_kuuki_train_writes_where_the_shipped_models_are_read() -> None:
    """Without --out, `kuuki train addressee|seat` replaces the package's own weights: the
    files the running bot loads, not a path beside them."""
    from kuuki.cli.train import _packaged
    from kuuki.decide.models import addressee, seat
    from kuuki.decide.models.features import shipped_path

    for name in (addressee.WEIGHTS_FILE, seat.WEIGHTS_FILE):
        assert _packaged(name) == shipped_path(name)
        assert _packaged(name).is_file()
