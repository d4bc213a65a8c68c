"""A kuuki.toml nested too deeply or too large, and input the readers did not foresee: one
line naming the file, never a RecursionError's thousands of lines."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from kuuki.cli import main
from kuuki.errors import ConfigError
from kuuki.settings import load_settings
from kuuki.settings.tomlfile import MAX_BYTES, MAX_DEPTH

# The file: 1.8 kB of arrays nested 900 deep.
ARRAYS_900 = "x = " + "[" * 900 + "]" * 900 + "\n"
DEEP = "tables and arrays nested more than 16 levels deep"
SHAPES = {
    "arrays-900": ARRAYS_900,
    # below Python's recursion limit: parsed, then refused before anything walks it
    "arrays-200": "x = " + "[" * 200 + "]" * 200 + "\n",
    "inline-tables": "x = " + "{a = " * 900 + "1" + "}" * 900 + "\n",
    "dotted-key": ".".join(["a"] * 3000) + " = 1\n",
    "table-header": "[" + ".".join(["a"] * 3000) + "]\n",
}


@pytest.mark.parametrize("command", [["doctor"], ["stats"], ["why"], ["replay", "chat.jsonl"]])
@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_deep_toml_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    command: list[str], text: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chat.jsonl").write_text('{"id": "m1", "t": 0, "user": "a", "text": "hi"}\n')
    cfg = tmp_path / "deep.toml"
    cfg.write_text(text, encoding="utf-8")
    code = main(["--config", str(cfg), *command])
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert "Traceback" not in said and "RecursionError" not in said
    if command == ["doctor"]:  # the settings check fails, in the doctor's own words
        assert code == 1
        assert captured.out.splitlines()[0] == (
            f"✗ settings: setting {cfg}: {DEEP}, which no setting needs (the deepest, a "
            "[[tools.http]] table's params, needs 6)"
        )
    else:
        assert code == 2 and captured.out == ""
        assert captured.err.startswith(f"kuuki: setting {cfg}: {DEEP}")
        assert len(captured.err.splitlines()) == 1


def test_the_depth_limit_is_the_documented_one(tmp_path: Path) -> None:
    def nested(levels: int) -> Path:  # the file's own table is one level
        cfg = tmp_path / f"d{levels}.toml"
        arrays = levels - 1
        cfg.write_text("x = " + "[" * arrays + "]" * arrays + "\n", encoding="utf-8")
        return cfg

    with pytest.raises(ConfigError, match="unknown setting"):  # read, then judged by key
        load_settings(env={}, path=nested(MAX_DEPTH))
    with pytest.raises(ConfigError, match=DEEP):
        load_settings(env={}, path=nested(MAX_DEPTH + 1))


def test_the_deepest_documented_setting_is_within_the_limit(tmp_path: Path) -> None:
    cfg = tmp_path / "kuuki.toml"
    cfg.write_text(  # the README's [[tools.http]] example: 6 levels
        '[tools]\nenabled = ["maintenance"]\n[[tools.http]]\nname = "maintenance"\n'
        'description = "When the next maintenance is"\n'
        'url = "https://status.example.org/api/maintenance/{region}"\n'
        'params = { region = "the region", lang = { type = "string", required = false } }\n',
        encoding="utf-8",
    )
    settings = load_settings(env={}, path=cfg)
    assert [t.name for t in settings.tools.http] == ["maintenance"]


@pytest.mark.parametrize("command", [["stats"], ["replay", "chat.jsonl"]])
def test_a_huge_toml_is_refused_without_reading_it_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    cfg = tmp_path / "big.toml"
    cfg.write_text("# padding\n" * (MAX_BYTES // 10 + 1), encoding="utf-8")  # valid TOML
    assert main(["--config", str(cfg), *command]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"kuuki: setting {cfg}: larger than 1 MB, which no settings file needs (a full "
        "kuuki.toml is a few kB); is it the right file?\n"
    )
    # a file that never ends is refused the same way instead of filling the memory
    assert main(["--config", "/dev/zero", *command]) == 2
    assert capsys.readouterr().err.startswith("kuuki: setting /dev/zero: larger than 1 MB")


def test_deep_json_in_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUUKI_TOOLS_HTTP", "[" * 100_000 + "]" * 100_000)
    assert main(["stats"]) == 2
    assert capsys.readouterr().err == (
        "kuuki: setting KUUKI_TOOLS_HTTP (from the environment): expected a JSON list of "
        "tool tables: nested too deeply\n"
    )


def test_a_deep_corpus_file_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dialogue = tmp_path / "dev" / "d1.json"
    dialogue.parent.mkdir()
    dialogue.write_text('{"dialogue_id": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert main(["eval", "addressee", str(dialogue.parent)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kuuki: ") and f"{dialogue}: not an MRMP dialogue file: nested " \
        "too deeply" in err
    assert len(err.splitlines()) == 1


def _deep_json(args: argparse.Namespace) -> int:
    json.loads("[" * 100_000 + "]" * 100_000)  # raises RecursionError
    return 0


def _out_of_memory(args: argparse.Namespace) -> int:
    raise MemoryError


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (_deep_json, "something it read is nested too deeply to follow (RecursionError)"),
        (_out_of_memory, "something it read is too large to hold in memory (MemoryError)"),
    ],
    ids=["recursion", "memory"],
)
def test_the_command_line_never_prints_a_bare_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    command: object, said: str,
) -> None:
    # Whatever reader did not foresee it, the edge says one line and exits 2.
    monkeypatch.setattr("kuuki.cli.parser.cmd_version", command)
    assert main(["version"]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"kuuki: version gave up: {said}; run with -v to see where\n"
    assert captured.out == ""
