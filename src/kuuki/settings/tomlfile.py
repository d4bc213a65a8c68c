"""Reading a kuuki.toml: one `ConfigError` naming the file for anything that is not a
settings file of sane size and shape, before any of it is looked at.

Limits: `MAX_BYTES` (1 MB: a full kuuki.toml with comments is a few kB) and `MAX_DEPTH`
levels of tables and arrays, the file's own table counted (the deepest setting, a
``[[tools.http]]`` table's ``params = { lang = { … } }``, needs 6). Python's TOML reader
recurses once per level of nesting, so a few kB of ``[[[[…`` end in a RecursionError, and
nesting just below that would end in one later, in whatever walks the values.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from kuuki.errors import ConfigError

MAX_BYTES = 1_000_000
MAX_DEPTH = 16


def read_toml(path: Path) -> dict[str, Any]:
    """The file's tables, or a ConfigError (key: the path) saying what is wrong with it."""
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            str(path), f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); "
            "save the file as UTF-8"
        ) from exc
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"not valid TOML: {exc}") from exc
    except RecursionError as exc:
        raise _too_deep(path) from exc
    if depth(raw) > MAX_DEPTH:
        raise _too_deep(path)
    return raw


def _read_bytes(path: Path) -> bytes:
    # At most one byte past the limit: a huge file, or a device that never ends
    # (--config /dev/zero), is refused without being held in memory.
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(str(path), f"cannot be read: {exc.strerror}") from exc
    if len(data) > MAX_BYTES:
        raise ConfigError(
            str(path), f"larger than {MAX_BYTES // 1_000_000} MB, which no settings file "
            "needs (a full kuuki.toml is a few kB); is it the right file?"
        )
    return data


def _too_deep(path: Path) -> ConfigError:
    return ConfigError(
        str(path), f"tables and arrays nested more than {MAX_DEPTH} levels deep, which no "
        "setting needs (the deepest, a [[tools.http]] table's params, needs 6)"
    )


def depth(value: Any) -> int:
    """How many tables and arrays deep ``value`` is (0 for a plain value), counted without
    recursion, so it is safe on any structure the reader returned."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            deepest = max(deepest, level)
            continue
        deepest = max(deepest, level + 1)
        if level + 1 > MAX_DEPTH:  # deep enough to refuse: no need to walk the rest
            return level + 1
        todo.extend((child, level + 1) for child in children)
    return deepest
