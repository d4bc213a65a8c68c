"""Jinja2 prompt templates, one folder per language, overridable from a user directory.

A user who wants other wording copies a template into `<prompts_dir>/<lang>/` with the same
file name; that copy wins over the packaged one.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2

_HERE = Path(__file__).resolve().parent


def format_timestamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S")


class Prompts:
    def __init__(self, language: str, user_dir: str | Path | None = None) -> None:
        loaders: list[jinja2.BaseLoader] = []
        if user_dir:
            loaders.append(jinja2.FileSystemLoader(str(Path(user_dir) / language)))
        loaders.append(jinja2.FileSystemLoader(str(_HERE / language)))
        self.language = language
        self.env = jinja2.Environment(
            loader=jinja2.ChoiceLoader(loaders),
            autoescape=False,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
            undefined=jinja2.StrictUndefined,
        )
        self.env.filters["format_timestamp"] = format_timestamp

    def render(self, name: str, **values: Any) -> str:
        text = self.env.get_template(f"{name}.j2").render(**values)
        # Collapse the blank lines that optional sections leave behind.
        lines: list[str] = []
        for line in text.splitlines():
            if line.strip() == "" and lines and lines[-1].strip() == "":
                continue
            lines.append(line.rstrip())
        return "\n".join(lines).strip() + "\n"
