"""Each channel its own manners: the `[channels.policy.<channel>]` tables of kuuki.toml.

A channel's policy says how the bot behaves there: its ``mode`` (``member``: the usual
judgment, made more or less ready to speak by ``readiness`` points on the local score;
``asked``: only when addressed; ``listen``: decide and record, post nothing), its own
``system_prompt``, ``keywords`` and ``language``, whether it may start talk itself
(``proactive``), and ``quiet_hours`` in the channel's ``timezone`` (across midnight when the
start is after the end). A table is keyed by the channel's name (``support`` or
``"#support"``) or its platform id, on either platform; a thread follows its channel.

`/kuuki mode` changes a channel's policy at run time; the change is kept in the store and
laid over the file's table (`PolicyBook`). Every error names the key as written:
``channels.policy.support.quiet_hours``.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from kuuki.domain import Channel
from kuuki.errors import ConfigError
from kuuki.settings.schema import LANGUAGES, Persona
from kuuki.settings.tools import _zone
from kuuki.settings.values import EnvText, shown

MODES = ("member", "asked", "listen")
MAX_READINESS = 50
_HOURS = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")
_TRUE = ("on", "true", "yes", "1")
_FALSE = ("off", "false", "no", "0")


@dataclass(frozen=True, slots=True)
class QuietHours:
    """From ``start`` to ``end`` in the channel's zone; across midnight when start > end."""

    start: time
    end: time

    def holds(self, local: time) -> bool:
        if self.start <= self.end:
            return self.start <= local < self.end
        return local >= self.start or local < self.end

    def __str__(self) -> str:
        return f"{self.start:%H:%M}-{self.end:%H:%M}"


@dataclass(frozen=True, slots=True)
class ChannelPolicy:
    mode: str = "member"
    readiness: int = 0  # points added to the local score before the thresholds
    system_prompt: str = ""  # "": the persona's
    keywords: tuple[str, ...] = ()  # (): the persona's
    language: str = ""  # "": the persona's default
    proactive: bool = True
    quiet_hours: QuietHours | None = None
    timezone: str = ""  # "": UTC

    def quiet_at(self, now: datetime) -> bool:
        """Whether ``now`` falls in the channel's quiet hours."""
        if self.quiet_hours is None:
            return False
        zone = ZoneInfo(self.timezone or "UTC")
        return self.quiet_hours.holds(now.astimezone(zone).time())

    def persona(self, base: Persona) -> Persona:
        """``base`` as this channel wants it: its prompt, keywords and language."""
        return replace(
            base,
            system_prompt=self.system_prompt or base.system_prompt,
            keywords=self.keywords or base.keywords,
            language=self.language or base.language,
        )

    def values(self) -> dict[str, Any]:
        """The policy as the user writes it (TOML/JSON values), defaults included."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = (str(v) if v is not None else "") if f.name == "quiet_hours" else (
                list(v) if isinstance(v, tuple) else v)
        return out

    def describe(self) -> str:
        """One line per setting, for `/kuuki mode`."""
        v = self.values()
        v["proactive"] = "on" if self.proactive else "off"
        v["keywords"] = ", ".join(self.keywords)
        return "\n".join(f"{k}: {val if val != '' else '(default)'}" for k, val in v.items())


POLICY_KEYS = tuple(f.name for f in fields(ChannelPolicy))
DEFAULT = ChannelPolicy()


def channel_key(name: str) -> str:
    """A table's channel as matched: ``#support`` and ``support`` are one channel."""
    return name.strip().lstrip("#")


def policies(key: str, v: Any) -> dict[str, ChannelPolicy]:
    """`[channels.policy.<channel>]` tables; from the environment, the same as JSON."""
    if isinstance(v, EnvText):
        try:
            v = json.loads(v)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ConfigError(key, f"expected a JSON object of channel tables: {exc}") from None
    if not isinstance(v, Mapping):
        raise ConfigError(key, f"expected tables such as [{key}.support], got {shown(v)}")
    out: dict[str, ChannelPolicy] = {}
    for name, table in v.items():
        where = f"{key}.{name}"
        if not channel_key(str(name)):
            raise ConfigError(where, "expected a channel name or id")
        if not isinstance(table, Mapping):
            raise ConfigError(where, f"expected a table of policy keys, got {shown(table)}")
        out[channel_key(str(name))] = changed(ChannelPolicy(), table, where)
    return out


def changed(policy: ChannelPolicy, values: Mapping[str, Any], where: str) -> ChannelPolicy:
    """``policy`` with ``values`` (TOML values, or text from `/kuuki mode`) checked and
    applied; a wrong one is a ConfigError naming ``where.<key>``."""
    for k, raw in values.items():
        if k not in POLICY_KEYS:
            raise ConfigError(f"{where}.{k}", f"unknown key; expected one of "
                                              f"{', '.join(POLICY_KEYS)}")
        policy = replace(policy, **{k: _PARSERS[k](f"{where}.{k}", raw)})
    return policy


def _mode(key: str, v: Any) -> str:
    if not isinstance(v, str) or v.strip().lower() not in MODES:
        raise ConfigError(key, f"expected one of {', '.join(MODES)}, got {shown(v)}")
    return v.strip().lower()


def _readiness(key: str, v: Any) -> int:
    try:
        n = int(v) if isinstance(v, (int, str)) and not isinstance(v, bool) else None
    except ValueError:
        n = None
    if n is None or not -MAX_READINESS <= n <= MAX_READINESS:
        raise ConfigError(key, f"expected a whole number of points from {-MAX_READINESS} to "
                               f"{MAX_READINESS} (added to the local score), got {shown(v)}")
    return n


def _text(key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise ConfigError(key, f"expected text, got {shown(v)}")
    return v.strip()


def _keywords(key: str, v: Any) -> tuple[str, ...]:
    if isinstance(v, str):
        v = v.split(",")
    if not isinstance(v, list) or not all(isinstance(k, str) for k in v):
        raise ConfigError(key, f"expected a list of words such as [\"python\"], got {shown(v)}")
    return tuple(k.strip() for k in v if k.strip())


def _language(key: str, v: Any) -> str:
    if not isinstance(v, str) or v.strip() not in ("", *LANGUAGES):
        raise ConfigError(key, f"expected one of {', '.join(LANGUAGES)}, got {shown(v)}")
    return v.strip()


def _switch(key: str, v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in (*_TRUE, *_FALSE):
        return v.strip().lower() in _TRUE
    raise ConfigError(key, f"expected true or false (on/off), got {shown(v)}")


def _quiet_hours(key: str, v: Any) -> QuietHours | None:
    if isinstance(v, str) and v.strip().lower() in ("", "off", "none"):
        return None
    m = _HOURS.match(v) if isinstance(v, str) else None
    if m is None or int(m[1]) > 23 or int(m[3]) > 23 or int(m[2]) > 59 or int(m[4]) > 59:
        raise ConfigError(key, "expected \"HH:MM-HH:MM\" in the channel's time zone, e.g. "
                               f"\"23:00-07:00\" (across midnight), got {shown(v)}")
    start, end = time(int(m[1]), int(m[2])), time(int(m[3]), int(m[4]))
    if start == end:
        raise ConfigError(key, f"the quiet hours start and end at the same time: {v!r}")
    return QuietHours(start, end)


def _timezone(key: str, v: Any) -> str:
    name = _text(key, v)
    if name:
        _zone(key, name)
    return name


_PARSERS: dict[str, Callable[[str, Any], Any]] = {
    "mode": _mode, "readiness": _readiness, "system_prompt": _text, "keywords": _keywords,
    "language": _language, "proactive": _switch, "quiet_hours": _quiet_hours,
    "timezone": _timezone,
}


class PolicyBook:
    """Every channel's policy: the file's tables, with `/kuuki mode` changes laid over
    (``stored``: channel id → the values changed there). Matched by the channel's id, its
    name, then its parent's id and name (a thread follows its channel)."""

    def __init__(
        self, table: Mapping[str, ChannelPolicy],
        stored: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.table = dict(table)
        self.stored: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (stored or {}).items()}
        self._names: dict[str, str] = {}  # channel id → name, learnt, for threads

    def owner(self, channel: Channel) -> str:
        """The id a change is kept under: the channel's, or a thread's channel's."""
        return channel.parent_id or channel.id

    def of(self, channel: Channel) -> ChannelPolicy:
        if not self.table and not self.stored:  # asked per message: the common case, free
            return DEFAULT
        if channel.parent_id is None:
            self._names[channel.id] = channel.name
        policy = self.configured(channel)
        values = self.stored.get(self.owner(channel))
        if values:
            # A stored row this version refuses leaves the file's policy (doctor says so).
            with contextlib.suppress(ConfigError):
                policy = changed(policy, values, f"/kuuki mode in {channel.name}")
        return policy

    def configured(self, channel: Channel) -> ChannelPolicy:
        """The file's policy for ``channel`` (the default when it names none)."""
        keys = [channel.id, channel.name]
        if channel.parent_id:
            keys += [channel.parent_id, self._names.get(channel.parent_id, "")]
        for k in keys:
            if k and channel_key(k) in self.table:
                return self.table[channel_key(k)]
        return ChannelPolicy()

    def listens_only(self, channel: Channel) -> bool:
        return self.of(channel).mode == "listen"

    def set(self, channel: Channel, values: Mapping[str, Any]) -> ChannelPolicy:
        """Lay ``values`` over the channel's policy (checked; a ConfigError names the
        bad key) and return the new policy; keeping it is the caller's."""
        owner = self.owner(channel)
        merged = {**self.stored.get(owner, {}), **values}
        policy = changed(self.configured(channel), merged, "/kuuki mode")
        self.stored[owner] = merged
        return policy

    def reset(self, channel: Channel) -> ChannelPolicy:
        self.stored.pop(self.owner(channel), None)
        return self.of(channel)
