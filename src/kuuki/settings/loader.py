"""Reading the settings: the TOML file, the environment and command-line flags become
`Raw` values, parsed through the table (kuuki.settings.core) and applied in order (the
environment wins over the file, flags over both), then checked across settings (`validate`);
`describe` shows them to a person with secrets masked.
"""

from __future__ import annotations

import difflib
import ipaddress
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from kuuki.errors import ConfigError
from kuuki.settings.core import _BY_ENV, _BY_TOML, _NOT_SETTINGS, Settings, Spec
from kuuki.settings.schema import (
    LLMSettings,
    Persona,
)
from kuuki.settings.tomlfile import read_toml
from kuuki.settings.tools import ToolSettings, resolve_secrets
from kuuki.settings.urls import mask_raw
from kuuki.settings.values import EnvText
from kuuki.text.secrets import MASK, remember, remember_url

log = logging.getLogger("kuuki.settings")


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
    raw = read_toml(path)
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
            # A table's parser names the key inside it (``….support.mode``): kept, under
            # the name the user wrote the table with.
            inner = exc.key[len(raw.spec.env):] if exc.key.startswith(raw.spec.env) else ""
            raise ConfigError(raw.key + inner, exc.problem, source=raw.source) from None
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
    settings = replace(settings, tools=resolve_secrets(settings.tools, env))
    remember_secrets(settings)
    return settings


def remember_secrets(s: Settings) -> None:
    """Register every secret ``s`` holds with the redaction step (kuuki.text.secrets):
    API keys, platform tokens, the signing secret, the passwords in URLs, HTTP tool header
    values (and the credential after a header's scheme word, ``Bearer <this>``)."""
    llms = [s.llm] + ([s.judge_llm] if s.judge_llm is not None else [])
    remember(*(m.api_key for m in llms), s.discord_token, s.slack_bot_token,
             s.slack_app_token, s.slack_signing_secret, s.dashboard_token)
    for url in (s.store_url, s.broker_url, *(m.base_url for m in llms)):
        remember_url(url)
    for tool in s.tools.http:
        for value in tool.headers.values():
            remember(value, value.split()[-1] if value.split() else None)


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
    if s.dashboard_port:
        check_dashboard(s)
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


DASHBOARD_TOKEN_CHARS = 16


def loopback(host: str) -> bool:
    """Whether ``host`` is this machine only: localhost or a loopback address (a host
    name may resolve to anything, so it is not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_dashboard(s: Settings) -> None:
    """The operator server's rule: loopback needs nothing; any other host needs
    `dashboard.token`, long enough not to be guessed, which every request must then carry."""
    token = s.dashboard_token
    if token and len(token) < DASHBOARD_TOKEN_CHARS:
        raise s.error(
            "dashboard_token",
            f"expected at least {DASHBOARD_TOKEN_CHARS} characters (e.g. the output of "
            "`openssl rand -hex 16`)",
        )
    if not loopback(s.dashboard_host) and not token:
        host = s.key_of("dashboard_host")[0]
        raise s.error(
            "dashboard_token",
            f"the operator server listens on {s.dashboard_host} ({host}), which is not this "
            "machine only: set a token, which every request must then carry "
            "(Authorization: Bearer <token>, or ?token= in a browser), or leave the host at "
            "127.0.0.1",
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
                          "headers": {h: MASK for h in t.headers}} for t in value.http],
            }
        elif f.name.endswith(("_token", "_secret")):
            value = MASK if value else ""
        elif f.name in ("broker_url", "store_url") and value:
            value = mask_raw(value)
        elif f.name == "channel_policy":
            value = {name: p.values() for name, p in value.items()}
        elif isinstance(value, Persona):
            value = {
                "name": value.name,
                "aliases": list(value.aliases),
                "language": value.default_language,
                "keywords": list(value.keywords),
            }
        out[f.name] = value
    return out
