"""Every setting, read once at the edge from the environment and an optional `kuuki.toml`.

A setting has one environment name (the seed documents' names where they have one) and one
place in the TOML file; the environment wins over the file. Values are validated here and
a wrong one stops start-up with a ConfigError that names the key and what is allowed.
Everything below the CLI receives the frozen `Settings` value, never the environment.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from kuuki.errors import ConfigError
from kuuki.settings.tools import ToolSettings, http_tools, resolve_secrets, timezone, timezones
from kuuki.settings.urls import mask_raw
from kuuki.settings.values import EnvText, Parser
from kuuki.settings.values import boolean as _bool
from kuuki.settings.values import choice as _choice
from kuuki.settings.values import float_range as _float_range
from kuuki.settings.values import int_list as _int_list
from kuuki.settings.values import int_range as _int_range
from kuuki.settings.values import languages as _languages
from kuuki.settings.values import llm_backend as _backend
from kuuki.settings.values import name as _name
from kuuki.settings.values import store_url as _store_url
from kuuki.settings.values import text as _str
from kuuki.settings.values import text_list as _list
from kuuki.settings.values import thresholds as _thresholds

log = logging.getLogger("kuuki.settings")

LANGUAGES = ("ja", "en")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
JUDGE_MODES = ("auto", "hybrid", "llm", "rules")
SLACK_MODES = ("socket", "http")
MAX_SHARDS = 65_536
# The LLM back-ends are the registry's one list (kuuki.llm.registry; see llm_backends).
# Whether the main model is offered tools: auto is on, except for the shipped SmolLM2-135M
# (measured unable to pick a tool; kuuki.app.tools_for, docs/decisions.md).
LLM_TOOL_MODES = ("auto", "on", "off")

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
    its own language (kuuki.text.language); "" means "unset", and then a persona whose
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
    # A reply (or ack) that is not written within this many seconds, waiting for the
    # model included, becomes the fallback, so the channel's other messages never wait
    # longer behind it (kuuki.respond.responder; docs/decisions.md, "The reply budget").
    reply_budget_s: float = 15.0
    prompt_tokens: int = 0  # 0: sized for the kind of model (kuuki.app.prompt_budget)
    # The languages the model can write; () means "as known for the model": the shipped
    # SmolLM2 writes English only, any other model is trusted with both (kuuki.app).
    languages: tuple[str, ...] = ()
    tools: str = "auto"

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
    tools: ToolSettings = field(default_factory=ToolSettings)
    store_url: str = ""  # "" → SQLite file under the user data dir
    prompts_dir: str = ""
    channel_allow: tuple[str, ...] = ()
    channel_deny: tuple[str, ...] = ()
    dms_enabled: bool = True
    # After a restart or an outage, addressed messages the bot missed are answered when at
    # most this old, otherwise recorded as missed (kuuki.engine.core, catching up).
    catch_up_minutes: float = 10.0
    # Bounded memory (kuuki.engine.channels): channels idle this long are dropped and rebuilt from
    # the store when they speak again; at most this many are held at once.
    channel_idle_minutes: float = 60.0
    max_live_channels: int = 500
    # auto: hybrid, except that the shipped demonstration model does not judge (measured
    # to make decisions worse than the local stage alone; kuuki.app.judge_mode_for).
    judge_mode: str = "auto"
    # A cost governor: LLM-stage calls a channel may spend at once (one more comes back
    # every 8 minutes; kuuki.decide.history.CallBudget). 0 switches it off.
    judge_call_budget: int = 4
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
    # Discord gateway shards (issue 14): 0 lets discord.py ask Discord for the recommended
    # count and run every shard here; () runs every shard of the count in this process.
    discord_shard_count: int = 0
    discord_shard_ids: tuple[int, ...] = ()
    # Slack: Socket Mode (one process), or the HTTP Events API behind a load balancer,
    # each request checked against the signing secret (kuuki.platforms.slack.http).
    slack_mode: str = "socket"
    slack_signing_secret: str = field(default="", repr=False)
    slack_http_host: str = "0.0.0.0"
    slack_http_port: int = 3000
    # Scale-out (issue 14, kuuki.scale): the RabbitMQ that carries events from gateways to
    # the workers owning their channels, and how many ordered partitions it has. Empty: one
    # process, no broker (the default).
    broker_url: str = field(default="", repr=False)
    broker_partitions: int = 16
    # attribute path → (key as the user wrote it, where it came from); see `key_of`.
    sources: Mapping[str, tuple[str, str]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def judge(self) -> LLMSettings:
        return self.judge_llm or self.llm

    def key_of(self, attr: str) -> tuple[str, str]:
        """How the user wrote the setting at `attr`, and where: ("persona.language",
        "from ./kuuki.toml"); its environment name and "" when nobody set it."""
        if attr in self.sources:
            return self.sources[attr]
        return (_BY_ATTR[attr].env if attr in _BY_ATTR else attr, "")

    def error(self, attr: str, problem: str) -> ConfigError:
        """A ConfigError about the setting at `attr`, named the way the user wrote it."""
        key, source = self.key_of(attr)
        return ConfigError(key, problem, source=source)


# ---------------------------------------------------------------------------------------
# The table of settings: (env name, TOML key, attribute path, parser)

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
    Spec("KUUKI_LLM", "llm.backend", "llm.backend", _backend),
    Spec("KUUKI_LLM_MODEL", "llm.model", "llm.model", _str),
    Spec("KUUKI_LLM_BASE_URL", "llm.base_url", "llm.base_url", _str),
    Spec("KUUKI_LLM_API_KEY", "llm.api_key", "llm.api_key", _str),
    Spec("KUUKI_LLM_MODEL_PATH", "llm.model_path", "llm.model_path", _str),
    Spec("KUUKI_LLM_TIMEOUT", "llm.timeout_s", "llm.timeout_s", _float_range(0.1, 3600)),
    Spec("KUUKI_LLM_MAX_RETRIES", "llm.max_retries", "llm.max_retries", _int_range(0, 10)),
    Spec(
        "KUUKI_REPLY_BUDGET", "llm.reply_budget_s", "llm.reply_budget_s",
        _float_range(0.1, 3600),
    ),
    Spec(
        "KUUKI_LLM_PROMPT_TOKENS", "llm.prompt_tokens", "llm.prompt_tokens",
        _int_range(0, 1_000_000),
    ),
    Spec("KUUKI_LLM_LANGUAGES", "llm.languages", "llm.languages", _languages),
    Spec("KUUKI_LLM_TOOLS", "llm.tools", "llm.tools", _choice(*LLM_TOOL_MODES)),
    Spec("KUUKI_TOOLS", "tools.enabled", "tools.enabled", _list),
    Spec("KUUKI_TOOL_ROUNDS", "tools.max_rounds", "tools.max_rounds", _int_range(0, 3)),
    Spec("KUUKI_TOOL_TIMEOUT", "tools.timeout_s", "tools.timeout_s", _float_range(0.1, 120)),
    Spec(
        "KUUKI_TOOL_RESULT_CHARS", "tools.result_chars", "tools.result_chars",
        _int_range(100, 20_000),
    ),
    Spec("KUUKI_TIMEZONE", "tools.timezone", "tools.timezone", timezone),
    Spec(
        "KUUKI_CHANNEL_TIMEZONES", "tools.channel_timezones", "tools.channel_timezones",
        timezones,
    ),
    Spec("KUUKI_USER_TIMEZONES", "tools.user_timezones", "tools.user_timezones", timezones),
    Spec("KUUKI_TOOLS_HTTP", "tools.http", "tools.http", http_tools),
    Spec("KUUKI_JUDGE_LLM", "judge_llm.backend", "judge_llm.backend", _backend),
    Spec("EAVESDROP_JUDGE_MODEL", "judge_llm.model", "judge_llm.model", _str),
    Spec("KUUKI_JUDGE_BASE_URL", "judge_llm.base_url", "judge_llm.base_url", _str),
    Spec("KUUKI_JUDGE_API_KEY", "judge_llm.api_key", "judge_llm.api_key", _str),
    Spec("KUUKI_STORE_URL", "store.url", "store_url", _store_url),
    Spec("KUUKI_PROMPTS_DIR", "prompts.dir", "prompts_dir", _str),
    Spec("KUUKI_CHANNEL_ALLOW", "channels.allow", "channel_allow", _list),
    Spec("KUUKI_CHANNEL_DENY", "channels.deny", "channel_deny", _list),
    Spec("KUUKI_DMS", "channels.dms", "dms_enabled", _bool),
    Spec(
        "KUUKI_CATCH_UP_MINUTES", "channels.catch_up_minutes", "catch_up_minutes",
        _float_range(0, 7 * 24 * 60),
    ),
    Spec(
        "KUUKI_CHANNEL_IDLE_MINUTES", "channels.idle_minutes", "channel_idle_minutes",
        _float_range(1, 7 * 24 * 60),
    ),
    Spec(
        "KUUKI_MAX_LIVE_CHANNELS", "channels.max_live", "max_live_channels",
        _int_range(1, 1_000_000),
    ),
    Spec("KUUKI_JUDGE_MODE", "judge.mode", "judge_mode", _choice(*JUDGE_MODES)),
    Spec(
        "KUUKI_JUDGE_CALL_BUDGET", "judge.call_budget", "judge_call_budget",
        _int_range(0, 1_000_000),
    ),
    Spec("DISCORD_TOKEN", "discord.token", "discord_token", _str),
    Spec("SLACK_BOT_TOKEN", "slack.bot_token", "slack_bot_token", _str),
    Spec("SLACK_APP_TOKEN", "slack.app_token", "slack_app_token", _str),
    Spec(
        "KUUKI_DISCORD_SHARD_COUNT", "discord.shard_count", "discord_shard_count",
        _int_range(0, MAX_SHARDS),
    ),
    Spec(
        "KUUKI_DISCORD_SHARD_IDS", "discord.shard_ids", "discord_shard_ids",
        _int_list(0, MAX_SHARDS - 1),
    ),
    Spec("KUUKI_SLACK_MODE", "slack.mode", "slack_mode", _choice(*SLACK_MODES)),
    Spec("SLACK_SIGNING_SECRET", "slack.signing_secret", "slack_signing_secret", _str),
    Spec("KUUKI_SLACK_HOST", "slack.host", "slack_http_host", _str),
    Spec("KUUKI_SLACK_PORT", "slack.port", "slack_http_port", _int_range(1, 65_535)),
    Spec("KUUKI_BROKER_URL", "broker.url", "broker_url", _str),
    Spec(
        "KUUKI_BROKER_PARTITIONS", "broker.partitions", "broker_partitions",
        _int_range(1, 1024),
    ),
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
_BY_ENV = {s.env: s for s in SPECS}
_BY_ATTR = {s.attr: s for s in SPECS}
# Environment names kuuki reads that are not settings (never reported as typos).
_NOT_SETTINGS = {"KUUKI_CONFIG"}


def llm_backends() -> tuple[str, ...]:
    """Every back-end name a setting or flag accepts: `none` and the registry's names."""
    from kuuki.llm.registry import names

    return ("none", *names())


@dataclass(frozen=True, slots=True)
class Raw:
    """One value before parsing: which setting, the value, and how the user wrote it."""

    spec: Spec
    value: Any
    key: str  # "persona.aliases", "KUUKI_PERSONA_ALIASES", "--llm", "aliases"
    source: str  # "from ./kuuki.toml", "from the environment", "command line"


def closest(key: str, known: Iterable[str]) -> str | None:
    """The known key a misspelt or misplaced one most likely meant."""
    known = list(known)
    last = key.rsplit(".", 1)[-1].upper()
    for k in known:  # the right name under the wrong table: [persona] CHANNEL_BUFFER_SIZE
        if k.rsplit(".", 1)[-1].upper() == last and k != key:
            return k
    found = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if found:
        return found[0]
    tails = {k.rsplit(".", 1)[-1].upper(): k for k in known}
    found = difflib.get_close_matches(last, list(tails), n=1, cutoff=0.6)
    return tails[found[0]] if found else None


def _unknown(key: str, known: Iterable[str], source: str) -> ConfigError:
    guess = closest(key, known)
    hint = f"; did you mean {guess}?" if guess else " (see the README's Configuration)"
    return ConfigError(key, f"unknown setting{hint}", source=source)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and dotted not in _BY_TOML:
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def _read_toml(path: Path) -> list[Raw]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise ConfigError(
            str(path), f"line {line}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); "
            "save the file as UTF-8"
        ) from exc
    except OSError as exc:
        raise ConfigError(str(path), f"cannot be read: {exc.strerror}") from exc
    source = f"from {path}"
    out: list[Raw] = []
    for key, value in _flatten(raw).items():
        if key not in _BY_TOML:
            raise _unknown(key, _BY_TOML, source)
        out.append(Raw(_BY_TOML[key], value, key, source))
    return out


def _read_env(env: Mapping[str, str]) -> list[Raw]:
    out: list[Raw] = []
    for name, value in env.items():
        spec = _BY_ENV.get(name)
        if spec is None:
            _warn_if_typo(name)
        elif value != "":
            out.append(Raw(spec, EnvText(value), name, "from the environment"))
    return out


def _warn_if_typo(name: str) -> None:
    # The environment holds every program's variables: only a near miss of one of ours
    # (CHANEL_BUFFER_SIZE) is worth a word, and a warning, since it may not be meant for us.
    if name in _NOT_SETTINGS or not name.isupper():
        return
    found = difflib.get_close_matches(name, list(_BY_ENV), n=1, cutoff=0.85)
    if found:
        log.warning(
            "environment variable %s is not a kuuki setting; did you mean %s?", name, found[0]
        )


def _apply(settings: Settings, attr: str, value: Any) -> Settings:
    if "." not in attr:
        return replace(settings, **{attr: value})
    group, name = attr.split(".", 1)
    current = getattr(settings, group)
    if current is None:  # judge_llm not yet set: start from the main LLM's settings
        current = settings.llm
    return replace(settings, **{group: replace(current, **{name: value})})


def apply_values(settings: Settings, raws: Iterable[Raw]) -> Settings:
    """`settings` with `raws` parsed and applied in order (later wins), then validated.

    A wrong value raises ConfigError naming the key as written and where it came from.
    """
    sources = dict(settings.sources)
    for raw in raws:
        try:
            value = raw.spec.parse(raw.spec.env, raw.value)
        except ConfigError as exc:
            raise ConfigError(raw.key, exc.problem, source=raw.source) from None
        settings = _apply(settings, raw.spec.attr, value)
        sources[raw.spec.attr] = (raw.key, raw.source)
    return validate(replace(settings, sources=sources))


def typed_values(
    values: Mapping[str, Any], keys: Mapping[str, str], source: str
) -> list[Raw]:
    """Typed values (a transcript's setup line) under the user's own names: `keys` maps
    each accepted name to its TOML key. An unknown name is a ConfigError."""
    out: list[Raw] = []
    for key, value in values.items():
        if key not in keys:
            raise _unknown(key, keys, source)
        out.append(Raw(_BY_TOML[keys[key]], value, key, source))
    return out


def load_settings(
    env: Mapping[str, str] | None = None,
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build Settings from a TOML file (if any), then env, then explicit overrides.

    `path` None means `$KUUKI_CONFIG` or `./kuuki.toml` when that file exists. Overrides
    are keyed by environment name (the CLI uses them for flags) and parsed as text.
    """
    env = dict(os.environ if env is None else env)
    raws: list[Raw] = []
    file = Path(path) if path else Path(env.get("KUUKI_CONFIG", "kuuki.toml"))
    if path is not None and not file.exists():
        raise ConfigError(str(file), "config file not found")
    if file.exists():
        raws.extend(_read_toml(file))
    raws.extend(_read_env(env))
    for name, value in (overrides or {}).items():
        if name not in _BY_ENV:
            raise _unknown(name, _BY_ENV, "command line")
        raws.append(Raw(_BY_ENV[name], EnvText(value), name, "command line"))
    settings = apply_values(Settings(), raws)
    # Header secrets are read from the environment here, at the edge, and only here.
    return replace(settings, tools=resolve_secrets(settings.tools, env))


def validate(s: Settings) -> Settings:
    """Checks across settings; errors name the key the way the user wrote it."""
    if s.JUDGE_LLM_THRESHOLD_LOW >= s.JUDGE_LLM_THRESHOLD_HIGH:
        high = s.key_of("JUDGE_LLM_THRESHOLD_HIGH")[0]
        raise s.error(
            "JUDGE_LLM_THRESHOLD_LOW",
            f"must be below {high} ({s.JUDGE_LLM_THRESHOLD_HIGH}), "
            f"got {s.JUDGE_LLM_THRESHOLD_LOW}",
        )
    for llm, group in ((s.llm, "llm"), (s.judge_llm, "judge_llm")):
        if llm is None:
            continue
        if llm.backend == "openai" and not llm.base_url and not llm.api_key:
            raise s.error(
                f"{group}.base_url",
                "the openai back-end needs a base URL (e.g. http://localhost:11434/v1 for "
                "Ollama) or an API key for api.openai.com",
            )
        if llm.backend == "openai" and not llm.model:
            raise s.error(
                f"{group}.model", "the openai back-end needs a model name (e.g. llama3.2)"
            )
        if llm.model_path and not Path(llm.model_path).is_file():
            raise s.error(f"{group}.model_path", f"no GGUF file at {llm.model_path}")
    if not s.persona.emoji:
        raise s.error("persona.emoji", "expected at least one emoji")
    _validate_platforms(s)
    overlap = set(s.channel_allow) & set(s.channel_deny)
    if overlap:
        raise s.error("channel_deny", f"channels both allowed and denied: {sorted(overlap)}")
    return s


def _validate_platforms(s: Settings) -> None:
    if s.discord_shard_ids and not s.discord_shard_count:
        count = s.key_of("discord_shard_count")[0]
        raise s.error(
            "discord_shard_ids",
            f"shard ids need the total number of shards: set {count} too (the same in "
            "every process)",
        )
    beyond = [i for i in s.discord_shard_ids if i >= s.discord_shard_count]
    if beyond:
        raise s.error(
            "discord_shard_ids",
            f"shard {beyond[0]} does not exist: with {s.discord_shard_count} shards the ids "
            f"are 0 to {s.discord_shard_count - 1}",
        )
    if s.slack_mode == "http" and s.slack_bot_token and not s.slack_signing_secret:
        raise s.error(
            "slack_signing_secret",
            "the HTTP Events API mode needs the app's signing secret (Basic Information → "
            "App Credentials → Signing Secret) to check that requests come from Slack",
        )


def describe(s: Settings) -> dict[str, Any]:
    """Settings as shown to a person: secrets masked."""
    out: dict[str, Any] = {}
    for f in fields(s):
        if f.name == "sources":
            continue
        value = getattr(s, f.name)
        if isinstance(value, LLMSettings):
            value = value.redacted()
        elif isinstance(value, ToolSettings):
            value = {
                "enabled": list(value.enabled),
                "max_rounds": value.max_rounds,
                "timeout_s": value.timeout_s,
                "http": [{"name": t.name, "url": t.url, "method": t.method,
                          "headers": {h: "***" for h in t.headers}} for t in value.http],
            }
        elif f.name.endswith(("_token", "_secret")):
            value = "***" if value else ""
        elif f.name in ("broker_url", "store_url") and value:
            value = mask_raw(value)
        elif isinstance(value, Persona):
            value = {
                "name": value.name,
                "aliases": list(value.aliases),
                "language": value.default_language,
                "keywords": list(value.keywords),
            }
        out[f.name] = value
    return out
