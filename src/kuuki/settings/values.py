"""How one raw value becomes a typed setting.

Values come in two shapes. Environment variables and command-line flags are text, marked
as `EnvText`, and parsed (`"a, b"` is a list, `"yes"` is true). Values from `kuuki.toml`
or a transcript's setup line already have a type, and it must be the right one: a string
where a list is expected (`aliases = "kuu"`) is an error, not a one-item list. Every parser
raises `ConfigError(key, problem)`; the loader re-raises it with the key the way the user
wrote it and where it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kuuki.errors import ConfigError, StoreError

Parser = Callable[[str, Any], Any]


class EnvText(str):
    """A setting's value as text, from the environment or a command-line flag."""

    __slots__ = ()


def shown(v: Any) -> str:
    """A value as the error message shows it: its TOML type and, if short, the value."""
    if isinstance(v, EnvText):
        return repr(str(v))
    if isinstance(v, bool):
        return f"{str(v).lower()} (true/false)"
    if isinstance(v, str):
        return f"text {v!r}"
    if isinstance(v, int | float):
        return f"the number {v}"
    if isinstance(v, list | tuple):
        return "a list"
    if isinstance(v, dict):
        return "a table"
    return type(v).__name__


def text(key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise ConfigError(key, f"expected text (in quotes), got {shown(v)}")
    return str(v)


def int_range(lo: int, hi: int) -> Parser:
    def parse(key: str, v: Any) -> int:
        n: int | None = None
        if isinstance(v, EnvText):
            try:
                n = int(v.strip())
            except ValueError:
                n = None
        elif isinstance(v, int) and not isinstance(v, bool):
            n = v
        if n is None:
            raise ConfigError(key, f"expected a whole number from {lo} to {hi}, got {shown(v)}")
        if not lo <= n <= hi:
            raise ConfigError(key, f"expected a whole number from {lo} to {hi}, got {n}")
        return n

    return parse


def float_range(lo: float, hi: float) -> Parser:
    def parse(key: str, v: Any) -> float:
        x: float | None = None
        if isinstance(v, EnvText):
            try:
                x = float(v.strip())
            except ValueError:
                x = None
        elif isinstance(v, int | float) and not isinstance(v, bool):
            x = float(v)
        if x is None or not lo <= x <= hi:
            raise ConfigError(key, f"expected a number from {lo} to {hi}, got {shown(v)}")
        return x

    return parse


def boolean(key: str, v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, EnvText):
        word = v.strip().lower()
        if word in ("1", "true", "yes", "on"):
            return True
        if word in ("0", "false", "no", "off"):
            return False
    hint = " (without quotes)" if isinstance(v, str) and not isinstance(v, EnvText) else ""
    raise ConfigError(key, f"expected true or false{hint}, got {shown(v)}")


def choice(*allowed: str) -> Parser:
    def parse(key: str, v: Any) -> str:
        word = text(key, v).strip().lower()
        if word not in allowed:
            raise ConfigError(key, f"expected one of {', '.join(allowed)}, got {v!r}")
        return word

    return parse


def llm_backend(key: str, v: Any) -> str:
    """A back-end the LLM registry knows (built-in or plugin), or `none`."""
    from kuuki.llm.registry import names

    return str(choice("none", *names())(key, v))


def text_list(key: str, v: Any) -> tuple[str, ...]:
    if isinstance(v, EnvText):
        items = [p.strip() for p in v.split(",")]
    elif isinstance(v, list | tuple) and all(isinstance(p, str) for p in v):
        items = [p.strip() for p in v]
    else:
        example = '["kuu", "くう"]'
        raise ConfigError(key, f"expected a list of texts such as {example}, got {shown(v)}")
    return tuple(p for p in items if p)


def languages(key: str, v: Any) -> tuple[str, ...]:
    """A list of language codes kuuki speaks (ja, en)."""
    items = text_list(key, v)
    wrong = [p for p in items if p not in ("ja", "en")]
    if wrong:
        raise ConfigError(key, f"expected a list of ja and en, got {shown(v)}")
    return tuple(dict.fromkeys(items))


def thresholds(key: str, v: Any) -> tuple[int, int, int]:
    nums: tuple[int, ...] = ()
    if isinstance(v, EnvText):
        try:
            nums = tuple(int(p) for p in text_list(key, v))
        except ValueError:
            nums = ()
    elif isinstance(v, list) and all(isinstance(p, int) and not isinstance(p, bool) for p in v):
        nums = tuple(v)
    if len(nums) != 3 or not 0 < nums[0] < nums[1] < nums[2]:
        raise ConfigError(
            key,
            "expected three increasing counts where acquaintance, regular and close start "
            f"(default [6, 31, 101]), got {shown(v) if not isinstance(v, list) else v}",
        )
    return (nums[0], nums[1], nums[2])


def name(key: str, v: Any) -> str:
    value = text(key, v).strip()
    if not value or len(value) > 64:
        raise ConfigError(key, "expected a name of 1 to 64 characters")
    return value


def store_url(key: str, v: Any) -> str:
    """A database URL kuuki can open (checked here, so a bad one stops start-up first)."""
    from kuuki.settings.urls import normalise_url

    value = text(key, v).strip()
    if value:
        try:
            normalise_url(value)
        except StoreError as exc:
            raise ConfigError(key, str(exc)) from None
    return value


def int_list(lo: int, hi: int) -> Parser:
    """Whole numbers from `lo` to `hi`, each once: ``"0,1"`` or ``[0, 1]``."""

    def parse(key: str, v: Any) -> tuple[int, ...]:
        nums: list[int] | None = None
        if isinstance(v, EnvText):
            try:
                nums = [int(p) for p in text_list(key, v)]
            except ValueError:
                nums = None
        elif isinstance(v, list) and all(
            isinstance(p, int) and not isinstance(p, bool) for p in v
        ):
            nums = list(v)
        if nums is None:
            raise ConfigError(
                key, f"expected a list of whole numbers such as [0, 1], got {shown(v)}"
            )
        wrong = [n for n in nums if not lo <= n <= hi]
        if wrong:
            raise ConfigError(key, f"expected numbers from {lo} to {hi}, got {wrong[0]}")
        twice = sorted({n for n in nums if nums.count(n) > 1})
        if twice:
            raise ConfigError(key, f"{twice[0]} is listed twice")
        return tuple(nums)

    return parse


ANY_MODEL = "*"  # the key of a price that applies to every model


def prices(key: str, v: Any) -> dict[str, float]:
    """A price per 1,000 tokens: one number for every model (``ANY_MODEL``), or a table of
    model → price; from the environment ``0.5`` or ``gpt-4o-mini=0.15, qwen2.5:3b=0``."""
    if isinstance(v, EnvText) and "=" in v:
        table: dict[str, Any] = {}
        for part in (p.strip() for p in v.split(",")):
            if part:
                model, _, price = part.rpartition("=")
                if not model.strip():
                    raise ConfigError(key, f"expected model=price pairs, got {part!r}")
                table[model.strip()] = EnvText(price)
        v = table
    if isinstance(v, Mapping):
        per = float_range(0, 1_000_000)
        return {str(m): per(f"{key}.{m}", x) for m, x in v.items()}
    try:
        return {ANY_MODEL: float_range(0, 1_000_000)(key, v)}
    except ConfigError:
        raise ConfigError(
            key, f"expected a price per 1,000 tokens (a number from 0) or a table such as "
                 f'{{ "gpt-4o-mini" = 0.15 }}, got {shown(v)}'
        ) from None
