"""README.md and README.ja.md carry the same facts: the same sections in the same order
(each opens with ``<a id="…"></a>``), the same commands, slash commands, settings, TOML
tables and keys, every command and benchmark the CLI has, the same default judge mode,
and on their first screen the one kuuki.toml block that gets replies in Japanese — a block
whose setting names are real (it is loaded as settings here)."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pytest

from kuuki.cli import build_parser
from kuuki.settings import load_settings

REPO = Path(__file__).resolve().parent.parent
READMES = {"en": REPO / "README.md", "ja": REPO / "README.ja.md"}
FIRST_SCREEN = 40  # lines

_ANCHOR = re.compile(r'^<a id="([a-z0-9-]+)"></a>\n(#{2,3}) ', re.M)
# "kuuki train addressee\|seat" in a table names two commands
_COMMAND = re.compile(r"\bkuuki ([a-z][a-z-]+)(?: ((?:[a-z][a-z-]+\\?\|)*[a-z][a-z-]+))?")
_GROUPS = ("memory", "eval", "train")  # commands whose second word is a command too
_SLASH = re.compile(r"/kuuki ((?:[a-z-]+\|)*[a-z-]+)")
_SETTING = re.compile(
    r"\b(?:KUUKI|DISCORD|SLACK|JUDGE|EAVESDROP|CHANNEL|SUMMARIZE|REFLECTION|FACT|PROACTIVE"
    r"|USER|RESPONSE|FAMILIARITY)_[A-Z0-9_]+\b")
_TOML_BLOCK = re.compile(r"```toml\n(.*?)```", re.S)
_TABLE = re.compile(r"^\[\[?([a-z_.]+)\]\]?", re.M)
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*) *=", re.M)


def text(lang: str) -> str:
    return READMES[lang].read_text(encoding="utf-8")


def sections(doc: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _ANCHOR.finditer(doc)]


_CODE = re.compile(r"```.*?```|`[^`\n]+`", re.S)


def commands(doc: str) -> set[str]:
    """The `kuuki …` commands written as code (in backticks or a code block)."""
    found = set()
    code = "\n".join(_CODE.findall(doc))
    for m in _COMMAND.finditer(code):
        cmd, subs = m.group(1), (m.group(2) or "").replace("\\", "").split("|")
        found.update(f"{cmd} {sub}" if cmd in _GROUPS and sub else cmd for sub in subs)
    return found


def slash_commands(doc: str) -> set[str]:
    return {name for m in _SLASH.finditer(doc) for name in m.group(1).split("|")}


def toml_facts(doc: str) -> tuple[set[str], set[str]]:
    blocks = _TOML_BLOCK.findall(doc)
    tables = {t for b in blocks for t in _TABLE.findall(b)}
    keys = {k for b in blocks for k in _KEY.findall(b)}
    return tables, keys


@pytest.mark.parametrize("facts", [sections, commands, slash_commands, toml_facts])
def test_both_readmes_carry_the_same_facts(facts: object) -> None:
    assert callable(facts)
    en, ja = facts(text("en")), facts(text("ja"))
    if isinstance(en, set) and isinstance(ja, set):
        assert en - ja == set(), f"README.ja.md lacks {sorted(en - ja)}"
        assert ja - en == set(), f"README.md lacks {sorted(ja - en)}"
    assert en == ja


def test_the_same_settings_are_named() -> None:
    en, ja = set(_SETTING.findall(text("en"))), set(_SETTING.findall(text("ja")))
    assert en - ja == set(), f"README.ja.md lacks {sorted(en - ja)}"
    assert ja - en == set(), f"README.md lacks {sorted(ja - en)}"


def test_every_section_opens_with_its_anchor_and_the_big_ones_are_there() -> None:
    ids = [i for i, _ in sections(text("en"))]
    for wanted in ("setup", "commands", "platforms", "scale-out", "doctor", "configuration",
                   "tools", "dashboard", "persona", "tuning", "memory", "transcripts",
                   "testing-a-persona", "development"):
        assert wanted in ids
    for lang in READMES:
        headings = len(re.findall(r"^#{2,3} ", text(lang), re.M))
        assert headings == len(sections(text(lang))), f"a {lang} heading has no anchor"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_every_command_and_benchmark_of_the_cli_is_in_both() -> None:
    top = _subcommands(build_parser())
    bench = sorted(_subcommands(top["bench"]))
    assert {"tools", "scale", "crash", "broker", "secrets", "seat"} <= set(bench)
    for lang in READMES:
        doc = text(lang)
        listed = commands(doc)
        named = {c.split()[0] for c in listed}
        assert set(top) - named == set(), (lang, sorted(set(top) - named))
        for group in _GROUPS:
            missing = {f"{group} {s}" for s in _subcommands(top[group])} - listed
            assert missing == set(), (lang, sorted(missing))
        [row] = [line for line in doc.splitlines() if line.startswith("| `kuuki bench NAME`")]
        missing = [b for b in bench if f"`{b}" not in row]
        assert missing == [], f"README {lang}'s bench list lacks {missing}"


def test_both_name_auto_the_default_judge_mode() -> None:
    assert "auto (default)" in text("en") and "auto`（既定" in text("ja")
    assert "hybrid`（既定" not in text("ja") and "`hybrid` (default" not in text("en")


@pytest.mark.parametrize("lang", list(READMES))
def test_the_first_screen_says_how_to_get_japanese_replies(lang: str, tmp_path: Path) -> None:
    first = "\n".join(text(lang).splitlines()[:FIRST_SCREEN])
    [block] = _TOML_BLOCK.findall(first)
    assert "Japanese" in first if lang == "en" else "日本語で返信" in first
    assert "ollama pull" in first
    config = tmp_path / "kuuki.toml"
    config.write_text(block, encoding="utf-8")
    settings = load_settings(path=config, env={})  # real setting names, valid values
    assert settings.llm.backend == "openai"
    assert settings.llm.base_url == "http://localhost:11434/v1"
    assert settings.llm.model == tomllib.loads(block)["llm"]["model"]
