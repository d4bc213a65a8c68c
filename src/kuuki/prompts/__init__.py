"""Jinja2 prompt templates, one folder per language, overridable from a user directory.

A user who wants other wording copies a template into `<prompts_dir>/<lang>/` with the same
file name; that copy wins over the packaged one. One `Prompts` serves both languages:
`render(..., language="ja")` picks the folder, and the language given at construction is
the default (the persona's). Which language a conversation gets is decided by the caller
(`kuuki.text.language`), never by the template.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2

_HERE = Path(__file__).resolve().parent
LANGUAGES = ("ja", "en")


def format_timestamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S")


class Prompts:
    def __init__(self, language: str, user_dir: str | Path | None = None) -> None:
        self.language = language
        self.user_dir = Path(user_dir) if user_dir else None
        self._envs: dict[str, jinja2.Environment] = {}

    def _env(self, language: str) -> jinja2.Environment:
        env = self._envs.get(language)
        if env is None:
            loaders: list[jinja2.BaseLoader] = []
            if self.user_dir is not None:
                loaders.append(jinja2.FileSystemLoader(str(self.user_dir / language)))
            loaders.append(jinja2.FileSystemLoader(str(_HERE / language)))
            env = jinja2.Environment(
                loader=jinja2.ChoiceLoader(loaders),
                autoescape=False,
                trim_blocks=True,
                lstrip_blocks=True,
                keep_trailing_newline=False,
                undefined=jinja2.StrictUndefined,
            )
            env.filters["format_timestamp"] = format_timestamp
            self._envs[language] = env
        return env

    def render(self, name: str, *, language: str | None = None, **values: Any) -> str:
        lang = language or self.language
        text = self._env(lang).get_template(f"{name}.j2").render(**values)
        # Collapse the blank lines that optional sections leave behind.
        lines: list[str] = []
        for line in text.splitlines():
            if line.strip() == "" and lines and lines[-1].strip() == "":
                continue
            lines.append(line.rstrip())
        return "\n".join(lines).strip() + "\n"

    def sources(self, language: str | None = None) -> dict[str, str]:
        """Every template in effect for a language (user copies winning), by name."""
        env = self._env(language or self.language)
        out: dict[str, str] = {}
        for name in env.list_templates(extensions=["j2"]):
            loader = env.loader
            assert loader is not None
            source, _, _ = loader.get_source(env, name)
            out[name.removesuffix(".j2")] = source
        return out
