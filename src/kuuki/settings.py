"""Every setting, read once at the edge from the environment and an optional `kuuki.toml`.

A setting has one environment name (the seed documents' names where they have one) and one
place in the TOML file; the environment wins over the file. Values are validated here and
a wrong one stops start-up with a ConfigError that names the key and what is allowed.
Everything below the CLI receives the frozen `Settings` value, never the environment.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import ConfigError

LANGUAGES = ("ja", "en")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
JUDGE_MODES = ("hybrid", "llm", "rules")
LLM_BACKENDS = ("embedded", "openai", "stub", "none", "scripted")

DEFAULT_EMOJI = ("👀", "😊", "👍", "🤔", "✨", "💡")
DEFAULT_SYSTEM_PROMPT = {
    "en": (
        "You are {name}, a friendly regular member of this chat. You speak casually and "
        "briefly, like a considerate friend, and you never dominate the conversation."
    ),
    "ja": (
        "あなたは「{name}」という名前の、このチャットの気さくな常連メンバーです。"
        "友達のように短く自然に話し、会話を独占しません。"
    ),
}


@dataclass(frozen=True, slots=True)
class Persona:
    """Who the bot is. ``language`` is only the default: each conversation is answered in
    its own language (kuuki.guard.language); "" means "unset", and then a persona whose
    name or aliases are written in Japanese defaults to ``ja``, any other to ``en``."""

    name: str = "Kuu"
    aliases: tuple[str, ...] = ("くう", "クウ", "空気")
    language: str = ""
    system_prompt: str = ""
    keywords: tuple[str, ...] = ()
    emoji: tuple[str, ...] = DEFAULT_EMOJI

    @property
    def default_language(self) -> str:
        if self.language in LANGUAGES:
            return self.language
        japanese = any(_JAPANESE.search(n) for n in self.names)
        return "ja" if japanese else "en"

    @property
    def prompt(self) -> str:
        return self.prompt_for(self.default_language)

    def prompt_for(self, language: str) -> str:
        """The persona prompt for a conversation in ``language``: the user's own prompt
        (whatever its language) if set, else the built-in one in that language."""
        template = self.system_prompt or DEFAULT_SYSTEM_PROMPT.get(
            language, DEFAULT_SYSTEM_PROMPT[self.default_language]
        )
        return template.replace("{name}", self.name)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True, slots=True)
class LLMSettings:
    backend: str = "embedded"
    model: str = ""
    base_url: str = ""
    api_key: str = field(default="", repr=False)
    model_path: str = ""
    timeout_s: float = 60.0
    max_retries: int = 3
    prompt_tokens: int = 0  # 0: sized for the kind of model (kuuki.app.prompt_budget)

    def redacted(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "model": self.model,
            "base_url": self.base_url,
            "api_key": "***" if self.api_key else "",
            "model_path": self.model_path,
            "timeout_s": self.timeout_s,
        }


@dataclass(frozen=True, slots=True)
class Settings:
    persona: Persona = field(default_factory=Persona)
    llm: LLMSettings = field(default_factory=LLMSettings)
    judge_llm: LLMSettings | None = None  # None: the judge uses the main model
    store_url: str = ""  # "" → SQLite file under the user data dir
    prompts_dir: str = ""
    channel_allow: tuple[str, ...] = ()
    channel_deny: tuple[str, ...] = ()
    dms_enabled: bool = True
    judge_mode: str = "hybrid"
    # Names from the seed documents (DESIGN §4).
    CHANNEL_BUFFER_SIZE: int = 50
    CHANNEL_BUFFER_TTL_MINUTES: int = 30
    SUMMARIZE_EVERY_N_MESSAGES: int = 20
    SUMMARIZE_EVERY_N_MINUTES: int = 15
    JUDGE_LLM_THRESHOLD_HIGH: int = 80
    JUDGE_LLM_THRESHOLD_LOW: int = 20
    RESPONSE_DIVERSITY_ENABLED: bool = True
    EAVESDROP_MIN_INTERVENTION_INTERVAL_MINUTES: int = 10
    FAMILIARITY_THRESHOLDS: tuple[int, int, int] = (6, 31, 101)
    REFLECTION_LULL_MINUTES: int = 10
    REFLECTION_MIN_MESSAGES: int = 10
    REFLECTION_MAX_BUFFER_MESSAGES: int = 100
    FACT_DECAY_HALF_LIFE_DAYS: float = 30.0
    FACT_STORE_MAX_FACTS_PER_CHANNEL: int = 500
    PROACTIVE_CONVERSATION_ENABLED: bool = True
    USER_PROFILE_ENABLED: bool = True
    CHANNEL_CONTEXT_ENABLED: bool = True
    REFLECTION_ENABLED: bool = True
    # Platforms
    discord_token: str = field(default="", repr=False)
    slack_bot_token: str = field(default="", repr=False)
    slack_app_token: str = field(default="", repr=False)

    @property
    def judge(self) -> LLMSettings:
        return self.judge_llm or self.llm


# ---------------------------------------------------------------------------------------
# The table of settings: (env name, TOML key, attribute path, parser)

Parser = Callable[[str, Any], Any]


def _str(key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise ConfigError(key, f"expected text, got {type(v).__name__}")
    return v


def _int_range(lo: int, hi: int) -> Parser:
    def parse(key: str, v: Any) -> int:
        try:
            n = int(v) if not isinstance(v, bool) else None
        except (TypeError, ValueError):
            n = None
        if n is None or (isinstance(v, float) and not v.is_integer()):
            raise ConfigError(key, f"expected a whole number from {lo} to {hi}, got {v!r}")
        if not lo <= n <= hi:
            raise ConfigError(key, f"expected a whole number from {lo} to {hi}, got {n}")
        return n

    return parse


def _float_range(lo: float, hi: float) -> Parser:
    def parse(key: str, v: Any) -> float:
        try:
            x = float(v) if not isinstance(v, bool) else None
        except (TypeError, ValueError):
            x = None
        if x is None or not lo <= x <= hi:
            raise ConfigError(key, f"expected a number from {lo} to {hi}, got {v!r}")
        return x

    return parse


def _bool(key: str, v: Any) -> bool:
    if isinstance(v, bool):
        return v
    text = str(v).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(key, f"expected true or false, got {v!r}")


def _choice(*allowed: str) -> Parser:
    def parse(key: str, v: Any) -> str:
        text = str(v).strip().lower()
        if text not in allowed:
            raise ConfigError(key, f"expected one of {', '.join(allowed)}, got {v!r}")
        return text

    return parse


def _list(key: str, v: Any) -> tuple[str, ...]:
    if isinstance(v, str):
        items = [p.strip() for p in v.split(",")]
    elif isinstance(v, list | tuple):
        items = [str(p).strip() for p in v]
    else:
        raise ConfigError(key, f"expected a list or comma-separated text, got {v!r}")
    return tuple(p for p in items if p)


def _thresholds(key: str, v: Any) -> tuple[int, int, int]:
    items = _list(key, v)
    try:
        nums = tuple(int(p) for p in items)
    except ValueError:
        nums = ()
    if len(nums) != 3 or not 0 < nums[0] < nums[1] < nums[2]:
        raise ConfigError(
            key,
            "expected three increasing counts where acquaintance, regular and close start "
            f"(default 6,31,101), got {v!r}",
        )
    return (nums[0], nums[1], nums[2])


def _name(key: str, v: Any) -> str:
    text = _str(key, v).strip()
    if not text or len(text) > 64:
        raise ConfigError(key, "expected a name of 1 to 64 characters")
    return text


@dataclass(frozen=True, slots=True)
class Spec:
    env: str
    toml: str
    attr: str  # "persona.name", "llm.backend", "judge_llm.model", or a Settings field
    parse: Parser


SPECS: tuple[Spec, ...] = (
    Spec("KUUKI_PERSONA_NAME", "persona.name", "persona.name", _name),
    Spec("KUUKI_PERSONA_ALIASES", "persona.aliases", "persona.aliases", _list),
    Spec("KUUKI_LANGUAGE", "persona.language", "persona.language", _choice(*LANGUAGES)),
    Spec("KUUKI_SYSTEM_PROMPT", "persona.system_prompt", "persona.system_prompt", _str),
    Spec("JUDGE_KEYWORDS", "persona.keywords", "persona.keywords", _list),
    Spec("KUUKI_EMOJI", "persona.emoji", "persona.emoji", _list),
    Spec("KUUKI_LLM", "llm.backend", "llm.backend", _choice(*LLM_BACKENDS)),
    Spec("KUUKI_LLM_MODEL", "llm.model", "llm.model", _str),
    Spec("KUUKI_LLM_BASE_URL", "llm.base_url", "llm.base_url", _str),
    Spec("KUUKI_LLM_API_KEY", "llm.api_key", "llm.api_key", _str),
    Spec("KUUKI_LLM_MODEL_PATH", "llm.model_path", "llm.model_path", _str),
    Spec("KUUKI_LLM_TIMEOUT", "llm.timeout_s", "llm.timeout_s", _float_range(0.1, 3600)),
    Spec("KUUKI_LLM_MAX_RETRIES", "llm.max_retries", "llm.max_retries", _int_range(0, 10)),
    Spec(
        "KUUKI_LLM_PROMPT_TOKENS", "llm.prompt_tokens", "llm.prompt_tokens",
        _int_range(0, 1_000_000),
    ),
    Spec("KUUKI_JUDGE_LLM", "judge_llm.backend", "judge_llm.backend", _choice(*LLM_BACKENDS)),
    Spec("EAVESDROP_JUDGE_MODEL", "judge_llm.model", "judge_llm.model", _str),
    Spec("KUUKI_JUDGE_BASE_URL", "judge_llm.base_url", "judge_llm.base_url", _str),
    Spec("KUUKI_JUDGE_API_KEY", "judge_llm.api_key", "judge_llm.api_key", _str),
    Spec("KUUKI_STORE_URL", "store.url", "store_url", _str),
    Spec("KUUKI_PROMPTS_DIR", "prompts.dir", "prompts_dir", _str),
    Spec("KUUKI_CHANNEL_ALLOW", "channels.allow", "channel_allow", _list),
    Spec("KUUKI_CHANNEL_DENY", "channels.deny", "channel_deny", _list),
    Spec("KUUKI_DMS", "channels.dms", "dms_enabled", _bool),
    Spec("KUUKI_JUDGE_MODE", "judge.mode", "judge_mode", _choice(*JUDGE_MODES)),
    Spec("DISCORD_TOKEN", "discord.token", "discord_token", _str),
    Spec("SLACK_BOT_TOKEN", "slack.bot_token", "slack_bot_token", _str),
    Spec("SLACK_APP_TOKEN", "slack.app_token", "slack_app_token", _str),
    *(
        Spec(name, f"tuning.{name}", name, parser)
        for name, parser in (
            ("CHANNEL_BUFFER_SIZE", _int_range(1, 10_000)),
            ("CHANNEL_BUFFER_TTL_MINUTES", _int_range(1, 24 * 60)),
            ("SUMMARIZE_EVERY_N_MESSAGES", _int_range(1, 10_000)),
            ("SUMMARIZE_EVERY_N_MINUTES", _int_range(1, 24 * 60)),
            ("JUDGE_LLM_THRESHOLD_HIGH", _int_range(0, 100)),
            ("JUDGE_LLM_THRESHOLD_LOW", _int_range(0, 100)),
            ("RESPONSE_DIVERSITY_ENABLED", _bool),
            ("EAVESDROP_MIN_INTERVENTION_INTERVAL_MINUTES", _int_range(0, 24 * 60)),
            ("FAMILIARITY_THRESHOLDS", _thresholds),
            ("REFLECTION_LULL_MINUTES", _int_range(1, 24 * 60)),
            ("REFLECTION_MIN_MESSAGES", _int_range(1, 10_000)),
            ("REFLECTION_MAX_BUFFER_MESSAGES", _int_range(1, 100_000)),
            ("FACT_DECAY_HALF_LIFE_DAYS", _float_range(0.01, 36_500)),
            ("FACT_STORE_MAX_FACTS_PER_CHANNEL", _int_range(1, 1_000_000)),
            ("PROACTIVE_CONVERSATION_ENABLED", _bool),
            ("USER_PROFILE_ENABLED", _bool),
            ("CHANNEL_CONTEXT_ENABLED", _bool),
            ("REFLECTION_ENABLED", _bool),
        )
    ),
)

_BY_TOML = {s.toml: s for s in SPECS}
_TOML_SECTIONS = {s.toml.split(".")[0] for s in SPECS} | {"judge_llm"}


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(str(path), f"cannot be read: {exc.strerror}") from exc
    flat = _flatten(raw)
    for key in flat:
        if key not in _BY_TOML:
            known = ", ".join(sorted(_BY_TOML)[:8])
            raise ConfigError(f"{path}: {key}", f"unknown setting (known keys include {known}, …)")
    return flat


def _apply(settings: Settings, attr: str, value: Any) -> Settings:
    if "." not in attr:
        return replace(settings, **{attr: value})
    group, name = attr.split(".", 1)
    current = getattr(settings, group)
    if current is None:  # judge_llm not yet set: start from the main LLM's settings
        current = settings.llm
    return replace(settings, **{group: replace(current, **{name: value})})


def load_settings(
    env: Mapping[str, str] | None = None,
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build Settings from a TOML file (if any), then env, then explicit overrides.

    `path` None means `$KUUKI_CONFIG` or `./kuuki.toml` when that file exists. Overrides
    are keyed by environment name (the CLI uses them for flags).
    """
    env = dict(os.environ if env is None else env)
    values: dict[str, tuple[Spec, Any]] = {}
    file = Path(path) if path else Path(env.get("KUUKI_CONFIG", "kuuki.toml"))
    if path is not None and not file.exists():
        raise ConfigError(str(file), "config file not found")
    if file.exists():
        for key, value in _read_toml(file).items():
            spec = _BY_TOML[key]
            values[spec.env] = (spec, value)
    by_env = {s.env: s for s in SPECS}
    for name, value in env.items():
        if name in by_env and value != "":
            values[name] = (by_env[name], value)
    for name, value in (overrides or {}).items():
        if name not in by_env:
            raise ConfigError(name, "unknown setting")
        values[name] = (by_env[name], value)

    settings = Settings()
    for spec, value in values.values():
        settings = _apply(settings, spec.attr, spec.parse(spec.env, value))
    return validate(settings)


def validate(s: Settings) -> Settings:
    if s.JUDGE_LLM_THRESHOLD_LOW >= s.JUDGE_LLM_THRESHOLD_HIGH:
        raise ConfigError(
            "JUDGE_LLM_THRESHOLD_LOW",
            f"must be below JUDGE_LLM_THRESHOLD_HIGH ({s.JUDGE_LLM_THRESHOLD_HIGH}), "
            f"got {s.JUDGE_LLM_THRESHOLD_LOW}",
        )
    for llm, prefix in ((s.llm, "KUUKI_LLM"), (s.judge_llm, "KUUKI_JUDGE")):
        if llm is None:
            continue
        if llm.backend == "openai" and not llm.base_url and not llm.api_key:
            raise ConfigError(
                f"{prefix}_BASE_URL",
                "the openai back-end needs a base URL (e.g. http://localhost:11434/v1 for "
                "Ollama) or an API key for api.openai.com",
            )
        if llm.model_path and not Path(llm.model_path).is_file():
            raise ConfigError(f"{prefix}_MODEL_PATH", f"no GGUF file at {llm.model_path}")
    if not s.persona.emoji:
        raise ConfigError("KUUKI_EMOJI", "expected at least one emoji")
    overlap = set(s.channel_allow) & set(s.channel_deny)
    if overlap:
        raise ConfigError("KUUKI_CHANNEL_DENY", f"channels both allowed and denied: {overlap}")
    return s


def describe(s: Settings) -> dict[str, Any]:
    """Settings as shown to a person: secrets masked."""
    out: dict[str, Any] = {}
    for f in fields(s):
        value = getattr(s, f.name)
        if isinstance(value, LLMSettings):
            value = value.redacted()
        elif f.name.endswith("_token"):
            value = "***" if value else ""
        elif isinstance(value, Persona):
            value = {
                "name": value.name,
                "aliases": list(value.aliases),
                "language": value.default_language,
                "keywords": list(value.keywords),
            }
        out[f.name] = value
    return out
