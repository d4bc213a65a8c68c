"""Secrets out of every text kuuki writes: one redaction step, and the secrets it knows.

`redact` is applied where foreign text becomes kuuki's own: an LLM server's error body, a
tool's or a platform's error, a broker's or a database's complaint (docs/decisions.md,
"Issue 24: secrets" and "Issue 33: a secret in any spelling"); never per chat message. It
masks two things with ``***``:

- **the secrets kuuki was given** — API keys, platform tokens, the signing secret, the
  passwords in database, broker and LLM URLs, HTTP tool header values — which settings
  loading and the app's build register (`remember`), and which the parts that hold one
  register again themselves (an `OpenAICompatLLM`, a `Store`, any store URL read), so a
  part built without settings is covered too. Each is found in any spelling foreign text
  carries it in — JSON-escaped (``\\/``, ``\\u00e4``, even ``\\u002d``), a ``repr`` of that,
  percent-encoded, a bytes ``repr``, HTML, broken by an escaped or a real line break
  (kuuki.text.spellings) — and only its own span is masked;
- **anything shaped like a credential**, known or not (kuuki.text.credentials): a server
  may echo a credential kuuki never saw (a proxy's, a rotated key), or one in another
  encoding; the shapes catch those.

A secret shorter than 8 characters is masked only as a whole word (a password "pw" does
not take the "pw" out of "pwd"), a longer one wherever it occurs, and one of 16 or more
also when cut short (its first 12 characters and what follows), as a shortened error
would show it.

A URL's password ends at its last ``@`` (`split_userinfo`): people type ``@``, ``/`` and
``'`` into passwords unencoded.

`RedactingFilter` is a second net for log handlers (the CLI installs it on its own): a
library's log line, or a traceback, is masked the same way.
"""

from __future__ import annotations

import base64
import functools
import logging
import re
import threading
from collections.abc import Iterable
from urllib.parse import unquote

from kuuki.text.credentials import mask_shapes
from kuuki.text.spellings import BREAK, canonical, spelled

MASK = "***"
_WHOLE_WORD_BELOW = 8
_PREFIX_FROM = 16
_PREFIX = 12
_TOKEN = r"A-Za-z0-9_-"
# A short secret starts a word, also right after an escaped line break ("\\npw").
_WORD_START = rf"(?:(?<![{_TOKEN}])|(?<=\\[nrt]))"
# What may follow a secret's first characters when a shortened error cut it.
_CUT_TAIL = r"[^\s\"'<>,;)}\]\\]*"


class Secrets:
    """The secret values to mask, and the masking (see the module doc)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: frozenset[str] = frozenset()
        self._probes: tuple[tuple[str, str], ...] = ()
        self._lock = threading.Lock()
        self.add(*values)

    def add(self, *values: str | None) -> None:
        """Register secrets (None and "" are skipped); a value's percent-decoded form is
        registered with it (its other spellings are found by `kuuki.text.spellings`)."""
        new: set[str] = set()
        for value in values:
            if not value:
                continue
            for form in (value, value.strip(), unquote(value)):
                if form and MASK not in form:
                    new.add(form)
        with self._lock:
            if not new <= self._values:
                self._set(self._values | new)

    def values(self) -> frozenset[str]:
        return self._values

    def restore(self, values: Iterable[str]) -> None:
        """Exactly ``values`` from now on (tests put back what they found)."""
        with self._lock:
            self._set(frozenset(values))

    def _set(self, values: frozenset[str]) -> None:
        self._values = values
        # Longest first: a secret inside a longer one goes with it.
        self._probes = tuple((_probe(v), v) for v in sorted(values, key=lambda v: (-len(v), v)))

    def redact(self, text: str, *, shapes: bool = True) -> str:
        """``text`` with every known secret, in any spelling, and (``shapes``) everything
        shaped like a credential, replaced by ``***``."""
        if not text:
            return text
        if self._probes:
            text = self._mask_known(text)
        if shapes:
            text = mask_shapes(text, MASK)
        return text

    def _mask_known(self, text: str) -> str:
        seen = canonical(text)
        there = [v for probe, v in self._probes if probe in seen]
        if not there:
            return text
        for value in there:
            text = _known_pattern(value).sub(MASK, text)
        # Fails closed: a secret the spelled patterns missed (a spelling only `canonical`
        # undoes) takes the text's canonical form with it.
        left = canonical(text)
        if any(_probe(v) in left for v in there if len(v) >= _WHOLE_WORD_BELOW):
            for value in there:
                left = _known_pattern(value).sub(MASK, left)
            return left
        return text


def _probe(value: str) -> str:
    """What shows ``value`` in a canonical text: all of it, or the first characters of
    one long enough to be masked when cut short."""
    seen = canonical(value)
    return seen[:_PREFIX] if len(value) >= _PREFIX_FROM else seen


@functools.lru_cache(maxsize=256)
def _known_pattern(value: str) -> re.Pattern[str]:
    """``value`` in any spelling: as a whole word when short, anywhere when longer, and
    when long also cut short (its first characters and what follows them)."""
    if len(value) < _WHOLE_WORD_BELOW:
        return re.compile(rf"{_WORD_START}{spelled(value)}(?![{_TOKEN}])")
    if len(value) < _PREFIX_FROM:
        return re.compile(spelled(value))
    # One sequence that starts with the first character: the search then jumps between
    # the characters that can start it.
    head, rest = spelled(value[:_PREFIX]), spelled(value[_PREFIX:])
    return re.compile(f"{head}(?:{BREAK}{rest}|{_CUT_TAIL})")


SECRETS = Secrets()


def remember(*values: str | None) -> None:
    """Register secrets with the process's registry."""
    SECRETS.add(*values)


def split_userinfo(url: str) -> tuple[str, str, str | None, str] | None:
    """``url`` as (``scheme://``, user, password or None, the rest after the ``@``), or
    None without a user. The password ends at the last ``@`` (before the query, if one
    holds an ``@``), so it may hold ``@``, ``/`` or ``'`` unencoded, as people type them."""
    scheme, found, after = url.partition("://")
    if not found:
        return None
    before_query = after.split("?", 1)[0]
    at = before_query.rfind("@") if "@" in before_query else after.rfind("@")
    if at < 0:
        return None
    user, colon, password = after[:at].partition(":")
    if (not user and not colon) or any(c in user for c in "/?#"):
        return None
    return f"{scheme}://", user, password if colon else None, after[at + 1:]


def remember_url(url: str | None) -> None:
    """Register the password of ``url`` (and the Basic credentials made of it)."""
    parts = split_userinfo(url.strip()) if url else None
    if parts is None or not parts[2]:
        return
    user, password = unquote(parts[1]), unquote(parts[2])
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    remember(parts[2], password, basic)


def redact(text: str, *, shapes: bool = True) -> str:
    """``text`` with every registered secret and (``shapes``) every credential-shaped
    string masked: the one redaction step (module doc)."""
    return SECRETS.redact(text, shapes=shapes)


def mask_userinfo(url: str) -> str:
    """The password in a URL string, which may not even parse, as ``***``."""
    parts = split_userinfo(url)
    if parts is None or parts[2] is None:
        return url
    scheme, user, _, rest = parts
    return f"{scheme}{user}:{MASK}@{rest}"


class RedactingFilter(logging.Filter):
    """A handler filter that redacts each record's message and traceback (a second net
    behind the redaction at the edges: libraries log too)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def redacting_handler() -> logging.Handler:
    """A handler to stderr whose records are redacted first."""
    handler = logging.StreamHandler()
    handler.addFilter(RedactingFilter())
    return handler
