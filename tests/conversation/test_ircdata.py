from pathlib import Path

from kuuki.conversation.disentangler import irc_minutes, previous_message_baseline
from kuuki.conversation.ircdata import parse_line, read_annotation, read_ascii


def test_parse_message_action_and_system_lines() -> None:
    m = parse_line(3, "[03:41] <hwilde> speeddemon8803, ever run ifconfig?")
    assert (m.index, m.minute, m.speaker, m.system) == (3, 3 * 60 + 41, "hwilde", False)
    assert m.text == "speeddemon8803, ever run ifconfig?"
    a = parse_line(0, "[10:00] * joe waves")
    assert (a.speaker, a.text, a.system) == ("joe", "waves", False)
    s = parse_line(1, "=== GOwin [~Miranda@210.213.142.27]  has left #ubuntu []")
    assert s.system and s.speaker == "GOwin" and s.minute is None


def test_annotation_children_and_multiple_parents(tmp_path: Path) -> None:
    p = tmp_path / "x.annotation.txt"
    p.write_text("1000 1000 -\n1000 1002 -\n1001 1002 -\n999 1001 -\n")
    assert read_annotation(p) == {1000: [1000], 1001: [999], 1002: [1000, 1001]}


def test_minutes_wrap_midnight_and_baseline(tmp_path: Path) -> None:
    p = tmp_path / "x.ascii.txt"
    p.write_text("[23:59] <a> hi\n=== b has joined\n[00:01] <b> yo\n[00:02] <a> hey b\n")
    lines = read_ascii(p)
    assert irc_minutes(lines) == [1439, 1439, 1441, 1442]
    # system lines start their own conversation; others link to the previous real message
    assert previous_message_baseline(lines) == [0, 1, 0, 2]
