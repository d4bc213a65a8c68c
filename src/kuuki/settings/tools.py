"""The settings of reply tools (kuuki.respond.tools): values, parsers and secret headers.

`[tools]` in kuuki.toml turns tools on and bounds them; `[[tools.http]]` declares an HTTP
JSON tool without code. Header values may name environment variables (``${NAME}``), which
are read once at start-up by `resolve_secrets`, so a token lives in the environment, not in
the file; resolved values are never shown (`HttpToolSpec` keeps them out of ``repr``,
`describe` masks them, traces show the URL only). Every error names the key the way it is
written in the file: ``tools.http[0].url``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kuuki.errors import ConfigError
from kuuki.settings.values import EnvText, shown

BUILTIN_TOOLS = ("recall", "now")
HTTP_METHODS = ("GET", "POST")
_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]{0,63}$")
_PLACEHOLDER = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*)\}")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PARAM_TYPES = ("string", "integer", "number", "boolean")


@dataclass(frozen=True, slots=True)
class HttpParam:
    name: str
    description: str = ""
    type: str = "string"
    required: bool = True
    enum: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HttpToolSpec:
    """One `[[tools.http]]` table. ``headers`` hold ``${NAME}`` references until
    `resolve_secrets` replaces them with the environment's values."""

    name: str
    description: str
    url: str
    method: str = "GET"
    params: tuple[HttpParam, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    keep: tuple[str, ...] = ()
    key: str = "tools.http"  # how the settings name this table, for errors

    def schema(self) -> dict[str, Any]:
        """The JSON schema of the tool's arguments, from its declared parameters."""
        props: dict[str, Any] = {}
        for p in self.params:
            prop: dict[str, Any] = {"type": p.type}
            if p.description:
                prop["description"] = p.description
            if p.enum:
                prop["enum"] = list(p.enum)
            props[p.name] = prop
        return {
            "type": "object",
            "properties": props,
            "required": [p.name for p in self.params if p.required],
            "additionalProperties": False,
        }


@dataclass(frozen=True, slots=True)
class ToolSettings:
    # Tools the model is offered; HTTP tools declared below are added to these.
    enabled: tuple[str, ...] = BUILTIN_TOOLS
    max_rounds: int = 3  # tool rounds per reply (the issue's limit); 0 turns tools off
    timeout_s: float = 5.0  # per tool call
    result_chars: int = 1200  # the most one result may add to the prompt
    timezone: str = ""  # `now` default; "" is this machine's zone
    channel_timezones: Mapping[str, str] = field(default_factory=dict)
    user_timezones: Mapping[str, str] = field(default_factory=dict)
    http: tuple[HttpToolSpec, ...] = ()


# -- parsers (same contract as kuuki.settings.values: key, value → typed value) -------------


def timezone(key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise ConfigError(key, f"expected a time zone name such as \"Asia/Tokyo\", got {shown(v)}")
    name = v.strip()
    if name:
        _zone(key, name)
    return name


def _zone(key: str, name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            key, f"unknown time zone {name!r}; use an IANA name such as \"Europe/Paris\""
        ) from None


def timezones(key: str, v: Any) -> dict[str, str]:
    """A table of name → time zone; from the environment ``general=Asia/Tokyo, dev=UTC``."""
    if isinstance(v, EnvText):
        pairs: dict[str, Any] = {}
        for part in (p.strip() for p in v.split(",")):
            if not part:
                continue
            if "=" not in part:
                raise ConfigError(key, f"expected name=Zone/Name pairs, got {part!r}")
            k, _, zone = part.partition("=")
            pairs[k.strip()] = zone.strip()
        v = pairs
    if not isinstance(v, Mapping):
        raise ConfigError(key, f"expected a table such as {{ general = \"Asia/Tokyo\" }}, "
                               f"got {shown(v)}")
    return {str(k): timezone(f"{key}.{k}", z) for k, z in v.items()}


def http_tools(key: str, v: Any) -> tuple[HttpToolSpec, ...]:
    """`[[tools.http]]` tables; from the environment, the same list as JSON."""
    if isinstance(v, EnvText):
        try:
            v = json.loads(v)
        except json.JSONDecodeError as exc:
            raise ConfigError(key, f"expected a JSON list of tool tables: {exc}") from None
        except RecursionError:  # the decoder recurses once per level of nesting
            raise ConfigError(key, "expected a JSON list of tool tables: nested too "
                              "deeply") from None
    if not isinstance(v, list) or not all(isinstance(t, Mapping) for t in v):
        raise ConfigError(key, f"expected [[tools.http]] tables, got {shown(v)}")
    specs = tuple(_http_tool(f"tools.http[{i}]", t) for i, t in enumerate(v))
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen or spec.name in BUILTIN_TOOLS:
            raise ConfigError(f"{spec.key}.name", f"the tool name {spec.name!r} is taken")
        seen.add(spec.name)
    return specs


_HTTP_KEYS = ("name", "description", "url", "method", "params", "headers", "keep")


def _http_tool(key: str, t: Mapping[str, Any]) -> HttpToolSpec:
    for k in t:
        if k not in _HTTP_KEYS:
            raise ConfigError(f"{key}.{k}", f"unknown key; expected one of {', '.join(_HTTP_KEYS)}")
    name = _required_text(key, t, "name")
    if not _NAME.match(name):
        raise ConfigError(f"{key}.name", "expected a name of letters, digits, _ and - "
                                         f"(starting with a letter), got {name!r}")
    url = _required_text(key, t, "url")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{key}.url", f"expected an http:// or https:// URL, got {url!r}")
    method = str(t.get("method", "GET")).upper()
    if method not in HTTP_METHODS:
        raise ConfigError(f"{key}.method", f"expected GET or POST, got {t.get('method')!r}")
    params = _params(f"{key}.params", t.get("params", {}))
    names = {p.name for p in params}
    for used in _PLACEHOLDER.findall(url):
        if used not in names:
            raise ConfigError(f"{key}.url", f"{{{used}}} is not declared in {key}.params")
    headers = t.get("headers", {})
    if not isinstance(headers, Mapping) or not all(
        isinstance(h, str) for h in headers.values()
    ):
        raise ConfigError(f"{key}.headers", "expected a table of header name = \"text\"")
    keep = t.get("keep", [])
    if not isinstance(keep, list) or not all(isinstance(k, str) and k for k in keep):
        raise ConfigError(f"{key}.keep", "expected a list of field paths such as "
                                         "[\"next.start\", \"items[].title\"]")
    return HttpToolSpec(
        name=name, description=_required_text(key, t, "description"), url=url, method=method,
        params=params, headers=dict(headers), keep=tuple(keep), key=key,
    )


def _required_text(key: str, t: Mapping[str, Any], k: str) -> str:
    value = t.get(k)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key}.{k}", "required: expected non-empty text")
    return value.strip()


def _params(key: str, v: Any) -> tuple[HttpParam, ...]:
    """``{ region = "the region" }`` (a required text) or ``{ day = { type = "string",
    description = "...", required = false, enum = [...] } }``."""
    if not isinstance(v, Mapping):
        raise ConfigError(key, f"expected a table of parameter = \"description\", got {shown(v)}")
    out: list[HttpParam] = []
    for name, spec in v.items():
        where = f"{key}.{name}"
        if not _NAME.match(str(name)):
            raise ConfigError(where, "expected a parameter name of letters, digits and _")
        if isinstance(spec, str):
            out.append(HttpParam(str(name), spec))
            continue
        if not isinstance(spec, Mapping):
            raise ConfigError(where, f"expected a description or a table, got {shown(spec)}")
        kind = spec.get("type", "string")
        if kind not in _PARAM_TYPES:
            raise ConfigError(f"{where}.type", f"expected one of {', '.join(_PARAM_TYPES)}")
        enum = spec.get("enum", [])
        if not isinstance(enum, list):
            raise ConfigError(f"{where}.enum", "expected a list")
        required = spec.get("required", True)
        if not isinstance(required, bool):
            raise ConfigError(f"{where}.required", "expected true or false")
        out.append(HttpParam(str(name), str(spec.get("description", "")), kind, required,
                             tuple(str(e) for e in enum)))
    return tuple(out)


def resolve_secrets(tools: ToolSettings, env: Mapping[str, str] | None = None) -> ToolSettings:
    """Replace ``${NAME}`` in HTTP tool headers with the environment's values, once."""
    env = os.environ if env is None else env
    specs = []
    for spec in tools.http:
        headers = {}
        for header, value in spec.headers.items():
            for ref in _ENV_REF.findall(value):
                if not env.get(ref):
                    raise ConfigError(f"{spec.key}.headers.{header}",
                                      f"needs the environment variable {ref}, which is not set")
            headers[header] = _ENV_REF.sub(lambda m: env.get(m.group(1), ""), value)
        specs.append(replace(spec, headers=headers))
    return replace(tools, http=tuple(specs))


def zone_for(tools: ToolSettings, channel: Any, user: Any) -> ZoneInfo | None:
    """The time zone for a question: the user's, else the channel's, else the default
    (None: this machine's own). Keys are ids or names."""
    for table, who in ((tools.user_timezones, user), (tools.channel_timezones, channel)):
        for k in (getattr(who, "id", None), getattr(who, "name", None)):
            if k is not None and k in table:
                return ZoneInfo(table[k])
    return ZoneInfo(tools.timezone) if tools.timezone else None
