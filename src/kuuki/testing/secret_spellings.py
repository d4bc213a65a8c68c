"""The secrets the redaction tests probe with, in every spelling kuuki can meet.

`CONFIGURED` are secrets kuuki is told about (a key, a token, passwords with ``/``, ``%``,
``ä``, ``@`` and ``'``); `SPELLINGS` writes one the ways foreign text carries it (JSON
escapes, a Python ``repr`` of JSON, percent-encoding, a bytes ``repr``, HTML, split by an
escaped or a real line break, cut short). `UNCONFIGURED` are credential-shaped texts kuuki
was never told about, each with the parts that must not survive. `leaks` says which parts
of a secret are still in a text. The unit tests run them through `kuuki.text.secrets`,
the end-to-end tests through a real OpenAI client, a tool, the store and `kuuki why`.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from urllib.parse import quote

CONFIGURED: dict[str, str] = {
    "API key": "sk-proj-Abc123Def456Ghi789Jkl012",
    "Slack bot token": "xoxb-1111111111-2222222222-BotTokenValue",
    "password with / and %": "db-pass/w%rd-long9",
    "password with ä": "pässwort-geheim-123",
    "password with @": "pw@3rS3cret",
    "password with ' and /": "it's/My-S3cret",
}


def _half(secret: str, between: str) -> str:
    middle = len(secret) // 2
    return secret[:middle] + between + secret[middle:]


def _every_punctuation_escaped(secret: str) -> str:
    return "".join(c if c.isalnum() and c.isascii() else f"\\u{ord(c):04x}" for c in secret)


def _lower_hex(encoded: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), encoded)


SPELLINGS: dict[str, Callable[[str], str]] = {
    "as configured": lambda s: s,
    "JSON-escaped": lambda s: json.dumps(s)[1:-1],
    "JSON-escaped with \\/": lambda s: json.dumps(s)[1:-1].replace("/", "\\/"),
    "JSON \\u for each dash and sign": _every_punctuation_escaped,
    "JSON in a Python repr": lambda s: json.dumps(s)[1:-1].replace("\\", "\\\\"),
    "URL-encoded": lambda s: quote(s, safe=""),
    "URL-encoded, / kept": quote,
    "URL-encoded, lowercase hex": lambda s: _lower_hex(quote(s, safe="")),
    "bytes repr": lambda s: repr(s.encode())[2:-1],
    "HTML-escaped": html.escape,
    "split by an escaped \\n": lambda s: _half(s, "\\n"),
    "split by an escaped \\t": lambda s: _half(s, "\\t"),
    "split by a line break": lambda s: _half(s, "\n"),
    "split by a line break and indent": lambda s: _half(s, "\n    "),
    "cut short": lambda s: s[:14] + "…",
}
CUT_FROM = 16  # a secret is masked when cut short only from this length on


def spelled_probes() -> list[tuple[str, str, str]]:
    """(secret's name, spelling's name, the secret so spelled) for every pair that applies
    and spells the secret in a way no earlier pair did."""
    probes: list[tuple[str, str, str]] = []
    for name, secret in CONFIGURED.items():
        seen: set[str] = set()
        for way, spell in SPELLINGS.items():
            spelled = spell(secret)
            if spelled not in seen and (way != "cut short" or len(secret) >= CUT_FROM):
                seen.add(spelled)
                probes.append((name, way, spelled))
    return probes


# (what it is, a text holding it, the parts that must not survive)
UNCONFIGURED: list[tuple[str, str, tuple[str, ...]]] = [
    ("key after an escaped newline",
     '{"error":"bad key:\\nsk-proj-Zyx987Wvu654Tsr321Qpo098"}', ("Zyx987Wvu654Tsr321Qpo098",)),
    ("Slack token after an escaped newline",
     '{"error":"bad token:\\nxoxb-3333333333-4444444444-OtherBotToken"}',
     ("3333333333", "OtherBotToken")),
    ("Slack token after an escaped tab",
     '{"error":"bad token:\\txoxp-5555555555-6666666666-UserTokenVal"}',
     ("5555555555", "UserTokenVal")),
    ("key with JSON-escaped dashes",
     "refused sk\\u002dproj\\u002dQaz741Wsx852Edc963Rfv074", ("Qaz741Wsx852Edc963Rfv074",)),
    ("key wrapped at a line break",
     "refused sk-proj-Plm159Okn357\nIjb246Uhv468 (retry)", ("Plm159Okn357", "Ijb246Uhv468")),
    ("?bearer=", "GET /v1/items?bearer=brr123tok456&page=2", ("brr123tok456",)),
    ("?auth=", "GET /v1/items?auth=ath987zyx654&page=2", ("ath987zyx654",)),
    ("?private_token=", "GET https://gitlab.example/api/v4/projects?private_token=glp5566abcd7788",
     ("glp5566abcd7788",)),
    ("#id_token=", "redirect to https://app.example/cb#id_token=idT0kenValue99&state=x",
     ("idT0kenValue99",)),
    ("password='…'", "connect(host='db', password='p@ss w0rd/x')", ("p@ss w0rd/x", "w0rd/x")),
    ("PGPASSWORD=", "PGPASSWORD=pgS3cret99 psql -h db", ("pgS3cret99",)),
    ("DATABASE_PASSWORD=", "DATABASE_PASSWORD=dbS3cret77 ./run", ("dbS3cret77",)),
    ("SLACK_SIGNING_SECRET=", "SLACK_SIGNING_SECRET=a1b2c3d4e5f6a7b8 kuuki run",
     ("a1b2c3d4e5f6a7b8",)),
    ('JSON field "token"', '{"token": "tok3nValue55", "ok": false}', ("tok3nValue55",)),
    ('JSON field "secret"', '{"secret": "s3cretValue66", "ok": false}', ("s3cretValue66",)),
    ("header pair x-api-key", "headers=[(b'x-api-key', b'apiKeyValue77'), (b'accept', b'*/*')]",
     ("apiKeyValue77",)),
    ("header pair authorization Token",
     "headers=[(b'authorization', b'Token authTokenValue88')]", ("authTokenValue88",)),
    ("Bearer after an escaped newline", "upstream said:\\nBearer brrTokenValue99xyz",
     ("brrTokenValue99xyz",)),
    ("Discord token cut at 50 characters",
     "token " + "MTEyMzQ1Njc4OTAxMjM0NTY3OA.GabcDE.abcdefghijklmnopqrstuvwxyz0123456789AB"[:50]
     + "… (cut)", ("MTEyMzQ1Njc4OTAxMjM0NTY3OA", "abcdefghijklmnop")),
    ("database URL, password with /",
     "could not connect to postgresql://kuuki:db-pass/w0rd9@db.example/kuuki",
     ("db-pass/w0rd9", "w0rd9")),
    ("database URL, password with '",
     "could not connect to postgresql://kuuki:it's-S3cret9@db.example/kuuki",
     ("it's-S3cret9", "S3cret9")),
]

_WINDOW = 6


def leaks(text: str, secret: str, spelled: str = "") -> list[str]:
    """The pieces of ``secret`` (and of its ``spelled`` form) still in ``text``: every run
    of six characters of either, so a half, an escaped form or a cut one is found too (of
    the spelled form, those with four letters or digits: a line break and its indent are
    in any text)."""
    pieces: list[str] = []
    for whole, least in ((secret, 0), (spelled, 4)):
        for start in range(max(len(whole) - _WINDOW + 1, 0)):
            piece = whole[start:start + _WINDOW]
            if (sum(c.isascii() and c.isalnum() for c in piece) >= least and piece in text
                    and piece not in pieces):
                pieces.append(piece)
    return pieces
