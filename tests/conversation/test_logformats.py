"""The IRC log formats `kuuki disentangle` and `kuuki eval disentangle` read.

Ubuntu's `[HH:MM] <nick> text`, `[HH:MM:SS]` times, and the `channel YYYY-MM-DD [...]`
prefix of Gouravajhala et al.'s channels; a line of no known form stops with file and line.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kuuki.conversation import cli
from kuuki.conversation.disentangler import irc_minutes
from kuuki.conversation.ircdata import parse_line, read_ascii
from kuuki.errors import TranscriptError

from .conftest import BigramEmbedder

# Two people helping two others at the same time, each pair calling the other by name:
# the same conversation written in each format the readers accept.
_TALK = [
    ("alice", "bob: did you try booting with nomodeset?"),
    ("carol", "dave: the stripe webhook needs the signing secret"),
    ("bob", "alice: yes, the screen stays black with nomodeset too"),
    ("dave", "carol: where do I find the signing secret?"),
    ("alice", "bob: which graphics card is it?"),
    ("carol", "dave: in the dashboard, under developers, webhooks"),
    ("bob", "alice: an nvidia gtx 970"),
    ("dave", "carol: found it, thanks, the webhook works now"),
]


def _write(path: Path, fmt: str) -> Path:
    rows = []
    for k, (nick, text) in enumerate(_TALK):
        mm, ss = 20 + k // 3, (k % 3) * 20 + 5
        rows.append(fmt.format(mm=mm, ss=ss, nick=nick, text=text))
    path.write_text("\n".join(rows) + "\n")
    return path


FORMATS = {
    "ubuntu": "[21:{mm:02d}] <{nick}> {text}",
    "seconds": "[21:{mm:02d}:{ss:02d}] <{nick}> {text}",
    "prefix_seconds": "rust 2018-05-29 [21:{mm:02d}:{ss:02d}] <{nick}> {text} ",
    "prefix_tab": "mediawiki 2013-01-26 [21:{mm:02d}:{ss:02d}] <{nick}>\t {text}  ",
    "prefix_minutes": "ubuntu-meeting 2010-11-08 [21:{mm:02d}] <{nick}> {text}",
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_reads_speakers_times_and_text(fmt: str, tmp_path: Path) -> None:
    lines = read_ascii(_write(tmp_path / f"{fmt}.ascii.txt", FORMATS[fmt]))
    assert [ln.speaker for ln in lines] == [n for n, _ in _TALK]
    assert [ln.text for ln in lines] == [t for _, t in _TALK]
    assert not any(ln.system for ln in lines)
    minutes = irc_minutes(lines)
    assert minutes == sorted(minutes) and minutes[-1] - minutes[0] >= 2


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_disentangle_links_the_pairs_in_every_format(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "default_embedder", BigramEmbedder)
    path = _write(tmp_path / f"{fmt}.ascii.txt", FORMATS[fmt])
    out = io.StringIO()
    cli.run_disentangle(path, 0, out)
    links = {(int(p), int(c)) for p, c, _ in (r.split() for r in out.getvalue().splitlines())}
    # each answer goes to the partner's previous line, never "new conversation"
    assert {(0, 2), (1, 3), (2, 4), (3, 5), (4, 6), (5, 7)} <= links
    assert not any(p == c for p, c in links if c >= 2)


def test_seconds_and_dates_give_fractional_minutes_across_midnight() -> None:
    a = parse_line(0, "rust 2018-05-29 [23:59:30] <talchas> late")
    b = parse_line(1, "rust 2018-05-30 [00:00:15] <talchas> later")
    assert a.minute == pytest.approx(23 * 60 + 59.5) and a.day is not None
    assert b.day == a.day + 1
    assert irc_minutes([a, b]) == pytest.approx([23 * 60 + 59.5, 24 * 60 + 0.25])


def test_system_action_and_notice_lines_with_and_without_prefix() -> None:
    s = parse_line(0, "ubuntu-meeting 2010-11-08 === yofel_ is now known as yofel ")
    assert s.system and s.speaker == "yofel_" and s.minute is None
    act = parse_line(1, "mediawiki 2007-09-14 [14:18:38] *cary-office \tcomes over there  ")
    assert (act.speaker, act.text, act.system) == ("cary-office", "comes over there", False)
    act2 = parse_line(2, "[13:56]  * genii sips a coffee")
    assert (act2.speaker, act2.text) == ("genii", "sips a coffee")
    notice = parse_line(3, "[05:12] -gfx:#ubuntu- happy holidays")
    assert (notice.speaker, notice.text, notice.system) == ("gfx", "happy holidays", False)


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("21:20 <talchas> no brackets", "not an IRC log line"),
        ("<talchas> no time at all", "not an IRC log line"),
        ("rust 2018-05-29 21:20:37 <talchas> no brackets", "not an IRC log line"),
        ("[25:61] <talchas> impossible time", "bad time"),
        ("rust 2018-13-45 [21:20:37] <talchas> impossible date", "bad date"),
        ("   ", "empty line"),
    ],
)
def test_unreadable_line_stops_with_file_and_line(bad: str, why: str, tmp_path: Path) -> None:
    path = tmp_path / "log.ascii.txt"
    path.write_text(f"[21:20] <a> fine\n[21:21] <b> fine too\n{bad}\n[21:22] <a> after\n")
    with pytest.raises(TranscriptError) as err:
        read_ascii(path)
    assert err.value.path == str(path) and err.value.line == 3
    assert why in err.value.problem
    assert f"{path}:3:" in str(err.value)


def test_cli_disentangle_reports_the_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kuuki.cli import main

    path = tmp_path / "log.ascii.txt"
    path.write_text("[21:20] <a> fine\nthis is not a log line\n")
    assert main(["disentangle", str(path)]) != 0
    err = capsys.readouterr().err
    assert f"{path}:2:" in err and "not an IRC log line" in err
