"""`Settings`, every setting kuuki has, and the table that names each one.

A setting has one environment name (the seed documents' names where they have one) and one
place in the TOML file; the environment wins over the file. Values are validated when read
(kuuki.settings.loader) and a wrong one stops start-up with a ConfigError that names the key
and what is allowed. Everything below the CLI receives the frozen `Settings` value, never the
environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kuuki.errors import ConfigError
from kuuki.settings.policy import ChannelPolicy, policies
from kuuki.settings.schema import (
    JUDGE_MODES,
    LANGUAGES,
    LLM_TOOL_MODES,
    MAX_SHARDS,
    SLACK_MODES,
    LLMSettings,
    Persona,
)
from kuuki.settings.tools import ToolSettings, http_tools, timezone, timezones
from kuuki.settings.values import Parser
from kuuki.settings.values import boolean as _bool
from kuuki.settings.values import choice as _choice
from kuuki.settings.values import float_range as _float_range
from kuuki.settings.values import int_list as _int_list
from kuuki.settings.values import int_range as _int_range
from kuuki.settings.values import languages as _languages
from kuuki.settings.values import llm_backend as _backend
from kuuki.settings.values import name as _name
from kuuki.settings.values import prices as _prices
from kuuki.settings.values import store_url as _store_url
from kuuki.settings.values import text as _str
from kuuki.settings.values import text_list as _list
from kuuki.settings.values import thresholds as _thresholds


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
    # Each channel its own manners (kuuki.settings.policy): channel name or id → policy.
    channel_policy: Mapping[str, ChannelPolicy] = field(default_factory=dict)
    # Listen everywhere: decide and record, post nothing (`kuuki run --shadow`).
    shadow: bool = False
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
    # every 8 minutes; kuuki.decide.judge.history.CallBudget). 0 switches it off.
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
    # Discord gateway shards: 0 lets discord.py ask Discord for the recommended
    # count and run every shard here; () runs every shard of the count in this process.
    discord_shard_count: int = 0
    discord_shard_ids: tuple[int, ...] = ()
    # Slack: Socket Mode (one process), or the HTTP Events API behind a load balancer,
    # each request checked against the signing secret (kuuki.platforms.slack.http).
    slack_mode: str = "socket"
    slack_signing_secret: str = field(default="", repr=False)
    slack_http_host: str = "0.0.0.0"
    slack_http_port: int = 3000
    # Scale-out (kuuki.scale): the RabbitMQ that carries events from gateways to
    # the workers owning their channels, and how many ordered partitions it has. Empty: one
    # process, no broker (the default).
    broker_url: str = field(default="", repr=False)
    broker_partitions: int = 16
    # The operator server (kuuki.ops): /metrics for Prometheus and the operator
    # page, next to `kuuki run` when a port is set here (or `kuuki run --dashboard`).
    # Loopback by default; any other host needs the token, asked of every request.
    dashboard_port: int = 0  # 0: no operator server unless `kuuki run --dashboard`
    dashboard_host: str = "127.0.0.1"
    dashboard_token: str = field(default="", repr=False)
    # A channel label on the decision counters: one time series per channel and action,
    # so off by default (label cardinality; docs/decisions.md).
    dashboard_metrics_per_channel: bool = False
    # The operator page shows a private channel's text only when this is set; a DM's never.
    dashboard_show_private: bool = False
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
    Spec(
        "KUUKI_LLM_PRICE_PER_1K", "llm.price_per_1k_tokens", "llm.price_per_1k_tokens",
        _prices,
    ),
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
    Spec("KUUKI_CHANNEL_POLICY", "channels.policy", "channel_policy", policies),
    Spec("KUUKI_SHADOW", "channels.shadow", "shadow", _bool),
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
    Spec("KUUKI_DASHBOARD_PORT", "dashboard.port", "dashboard_port", _int_range(0, 65_535)),
    Spec("KUUKI_DASHBOARD_HOST", "dashboard.host", "dashboard_host", _name),
    Spec("KUUKI_DASHBOARD_TOKEN", "dashboard.token", "dashboard_token", _str),
    Spec(
        "KUUKI_METRICS_PER_CHANNEL", "dashboard.metrics_per_channel",
        "dashboard_metrics_per_channel", _bool,
    ),
    Spec(
        "KUUKI_DASHBOARD_SHOW_PRIVATE", "dashboard.show_private",
        "dashboard_show_private", _bool,
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
# kuuki's variables that are not settings: the file to read, the corpora's folder
_NOT_SETTINGS = {"KUUKI_CONFIG", "KUUKI_DATA_DIR"}


def llm_backends() -> tuple[str, ...]:
    """Every back-end name a setting or flag accepts: `none` and the registry's names."""
    from kuuki.llm.registry import names

    return ("none", *names())
