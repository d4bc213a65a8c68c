"""Column types that clean values at the database boundary.

Chat text is hostile input: lone UTF-16 surrogates (from badly decoded platform payloads)
cannot be encoded as UTF-8, and PostgreSQL refuses NUL characters in text and in JSONB.
Rather than letting one such message fail a whole batched transaction, every text and JSON
value is sanitised on its way in, identically on SQLite and PostgreSQL, so both backends
return the same thing. Datetimes are stored in UTC and always come back timezone-aware:
SQLite keeps no zone, so the zone is re-attached on the way out.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Dialect, String, Text, TypeDecorator
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeEngine

REPLACEMENT = "\ufffd"

# Lone surrogates and NUL are the only characters that the databases reject; everything
# else (other control characters, zero-width characters, RTL marks) is kept verbatim.
_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")


def suspect_json(dumped: str) -> bool:
    """Might ``dumped`` (JSON text, non-ASCII kept) hold what a database refuses: a lone
    surrogate, an escaped NUL, or a bare NaN/Infinity? Such text inside an ordinary string
    only costs a trip through the slow path. (Substring tests and one UTF-8 encode, which
    fails exactly on surrogates: a third of the time of one regular expression.)"""
    if "NaN" in dumped or "Infinity" in dumped or "\\u0000" in dumped:
        return True
    if dumped.isascii():
        return False
    try:
        dumped.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# json.dumps(value, ensure_ascii=False, separators=(",", ":")) builds this encoder anew on
# every call; the message path stores a few documents a message.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class EncodedJSON(str):
    """JSON text already encoded the way :func:`dump_json` does and found clean
    (see kuuki.store.trace_json): stored as it is."""

    __slots__ = ()


def clean_text(value: str) -> str:
    """Return ``value`` with NUL and unpaired surrogates replaced by U+FFFD.

    A correctly paired surrogate sequence (which can appear in a Python str built from
    UTF-16 data) is joined into the character it encodes instead of being replaced.
    """
    if _BAD_CHARS.search(value) is None:  # fast path: almost every message
        return value
    if "\x00" in value:
        value = value.replace("\x00", REPLACEMENT)
    # Round-trip through UTF-16: valid pairs combine, lone halves become U+FFFD.
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_json(value: Any) -> Any:
    """Make ``value`` storable as JSON on every backend.

    Strings (keys included) are cleaned like text; tuples and sets become lists;
    non-finite floats become None because JSONB rejects NaN and Infinity; anything else
    that JSON cannot represent is stored as its ``str()``.
    """
    # Fast path: one C-accelerated dump and a scan. Decision traces are written for every
    # message, and walking them in Python dominated the batched ingest profile.
    try:
        dumped = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return _clean_json(value)
    return _clean_json(value) if suspect_json(dumped) else value


def dump_json(value: Any) -> str | None:
    """``value`` as the JSON text the Core path stores: :func:`clean_json`, then the
    engine's serializer (compact, non-ASCII kept, ``default=str``), in one encode when
    nothing needs cleaning. None stays None (SQL NULL)."""
    if value is None:
        return None
    if type(value) is EncodedJSON:
        return str(value)
    if type(value) is list and not value:
        return "[]"  # a message's mentions, mostly
    try:
        dumped = _encode(value)
    except (TypeError, ValueError):
        dumped = None
    if dumped is not None and not suspect_json(dumped):
        return dumped
    return json.dumps(
        _clean_json(value), ensure_ascii=False, separators=(",", ":"), default=str
    )


def _clean_json(value: Any) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {clean_text(str(k)): _clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_clean_json(v) for v in value]
    if isinstance(value, datetime):
        return to_utc(value).isoformat()
    return clean_text(str(value))


def to_utc(value: datetime) -> datetime:
    """Aware datetime in UTC; a naive value is taken to already be UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class SafeText(TypeDecorator[str]):
    """Unbounded text, sanitised on the way in."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return None if value is None else clean_text(value)


class SafeString(TypeDecorator[str]):
    """Identifier-like string (ids, names, enum values), sanitised on the way in."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return None if value is None else clean_text(value)


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamp stored as UTC, returned timezone-aware on every backend."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = to_utc(value)
        # SQLite stores the ISO text; dropping the zone after converting keeps every stored
        # value in one format, so string comparison in SQL orders them correctly.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else to_utc(value)


class SafeJSON(TypeDecorator[Any]):
    """JSON document (JSONB on PostgreSQL), cleaned with :func:`clean_json` on the way in.

    SQL NULL stands for Python None; a JSON ``null`` document is never stored.
    """

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(JSONB(none_as_null=True))
        return dialect.type_descriptor(JSON(none_as_null=True))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if type(value) is EncodedJSON:  # the Core path (PostgreSQL) binds the document
            return json.loads(value)
        return None if value is None else clean_json(value)
