"""Secrets out of every text kuuki writes: one redaction step, and the secrets it knows.

`redact` is applied where foreign text becomes kuuki's own: an LLM server's error body, a
tool's or a platform's error, a broker's or a database's complaint (docs/decisions.md,
"Issue 24: secrets"). It masks two things with ``***``:

- **the secrets kuuki was given** — API keys, platform tokens, the signing secret, the
  passwords in database, broker and LLM URLs, HTTP tool header values — which settings
  loading and the app's build register (`remember`), and which the parts that hold one
  register again themselves (an `OpenAICompatLLM`, a `Store`), so a part built without
  settings is covered too;
- **anything shaped like a credential**, known or not: ``Bearer …``/``Basic …``, an
  ``Authorization:`` value, OpenAI/Groq/Hugging Face/GitHub/Google-style keys (``sk-…``),
  Slack tokens (``xoxb-…``, ``xapp-…``), Discord-token- and JWT-shaped strings, the
  password in ``scheme://user:password@``, ``key=``/``api_key=``/``token=``… parameters
  and ``"api_key": …``/``password: …`` fields. A server may echo a credential kuuki never
  saw (a proxy's, a rotated key), or one in another encoding; the shapes catch those.

A secret shorter than 8 characters is masked only as a whole word (a password "pw" does
not take the "pw" out of "pwd"), a longer one wherever it occurs, and one of 16 or more
also when cut short (its first 12 characters and what follows), as a shortened error
would show it.

`RedactingFilter` is a second net for log handlers (the CLI installs it on its own): a
library's log line, or a traceback, is masked the same way.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections.abc import Iterable
from urllib.parse import quote, unquote, urlsplit

MASK = "***"
_WHOLE_WORD_BELOW = 8
_PREFIX_FROM = 16
_PREFIX = 12
_TOKEN = r"A-Za-z0-9_-"

# scheme://user:password@ in running text: the password ends at the last @ before a blank,
# a slash or a quote (an unencoded @ in it included).
_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/\s]*):(?P<pw>[^\s/\"'<>]*)@"
)
# For a value known to be one URL, which may not even parse: up to its last @.
_USERINFO_LENIENT = re.compile(r"(?P<scheme>[^:/]+://)(?P<user>[^:@/]*):(?P<pw>.*)@")

_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/-]{8,}=*"), rf"\1\2{MASK}"),
    (re.compile(r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?)([A-Za-z]+\s+)?[^\s\"',;})\]]+"),
     rf"\1\2{MASK}"),
    (re.compile(
        rf"(?<![{_TOKEN}])(?:sk-(?=[{_TOKEN}]*\d)[{_TOKEN}]{{20,}}"
        r"|(?:gsk|hf|ghp|gho|ghu|ghs|ghr|github_pat|glpat)[_-][A-Za-z0-9_]{20,}"
        rf"|AIza[{_TOKEN}]{{30,}}"
        r"|xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,})"
    ), MASK),
    # Discord bot tokens (id.timestamp.hmac in base64url) and JWTs (header.body.signature).
    (re.compile(
        rf"(?<![{_TOKEN}])(?=[.{_TOKEN}]*\d)[{_TOKEN}]{{17,}}\.[{_TOKEN}]{{4,}}\.[{_TOKEN}]{{20,}}"
        rf"(?![{_TOKEN}])"
    ), MASK),
    (re.compile(
        r"(?i)(?<![A-Za-z0-9_])((?:api[_-]?key|apikey|key|access[_-]?token|auth[_-]?token"
        r"|refresh[_-]?token|token|secret|client[_-]?secret|password|passwd|pwd|sig"
        r"|signature)=)[^\s&#\"'<>]+"
    ), rf"\1{MASK}"),
    (re.compile(
        r"(?i)([\"']?\b(?:x-)?(?:api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret"
        r"|secret[_-]?key|password|passwd|signing[_-]?secret)[\"']?\s*:\s*[\"']?)[^\s\"',;})\]]+"
    ), rf"\1{MASK}"),
)


class Secrets:
    """The secret values to mask, and the masking (see the module doc)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: set[str] = set()
        self._known: re.Pattern[str] | None = None
        self._lock = threading.Lock()
        self.add(*values)

    def add(self, *values: str | None) -> None:
        """Register secrets (None and "" are skipped); a value's percent-encoded and
        -decoded forms are registered with it."""
        new: set[str] = set()
        for value in values:
            if not value:
                continue
            for form in (value, value.strip(), unquote(value), quote(value, safe="")):
                if form and MASK not in form:
                    new.add(form)
        with self._lock:
            if not new <= self._values:
                self._values |= new
                self._known = _known_pattern(self._values)

    def values(self) -> frozenset[str]:
        return frozenset(self._values)

    def restore(self, values: Iterable[str]) -> None:
        """Exactly ``values`` from now on (tests put back what they found)."""
        with self._lock:
            self._values = set(values)
            self._known = _known_pattern(self._values) if self._values else None

    def redact(self, text: str, *, shapes: bool = True) -> str:
        """``text`` with every known secret, and (``shapes``) everything shaped like a
        credential, replaced by ``***``."""
        if not text:
            return text
        known = self._known
        if known is not None:
            text = known.sub(MASK, text)
        if shapes:
            text = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
            for pattern, replacement in _SHAPES:
                text = pattern.sub(replacement, text)
        return text


def _known_pattern(values: set[str]) -> re.Pattern[str] | None:
    if not values:
        return None
    ordered = sorted(values, key=lambda v: (-len(v), v))
    whole = [
        re.escape(v) if len(v) >= _WHOLE_WORD_BELOW
        else rf"(?<![{_TOKEN}]){re.escape(v)}(?![{_TOKEN}])"
        for v in ordered
    ]
    cut = [rf"{re.escape(v[:_PREFIX])}[^\s\"'<>,;)}}\]]*" for v in ordered
           if len(v) >= _PREFIX_FROM]
    return re.compile("|".join(whole + cut))


SECRETS = Secrets()


def remember(*values: str | None) -> None:
    """Register secrets with the process's registry."""
    SECRETS.add(*values)


def remember_url(url: str | None) -> None:
    """Register the password of ``url`` (and the Basic credentials made of it)."""
    if not url:
        return
    try:
        parts = urlsplit(url.strip())
        user, password = parts.username, parts.password
    except ValueError:
        found = _USERINFO_LENIENT.match(url.strip())
        user, password = (found["user"], found["pw"]) if found else (None, None)
    if password:
        basic = f"{unquote(user or '')}:{unquote(password)}"
        remember(password, base64.b64encode(basic.encode()).decode())


def redact(text: str, *, shapes: bool = True) -> str:
    """``text`` with every registered secret and (``shapes``) every credential-shaped
    string masked: the one redaction step (module doc)."""
    return SECRETS.redact(text, shapes=shapes)


def mask_userinfo(url: str) -> str:
    """The password in a URL string, which may not even parse, as ``***``."""
    return _USERINFO_LENIENT.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", url)


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
