"""What a credential looks like, for the secrets kuuki was never told about.

A server may echo a credential kuuki never saw (a proxy's, a rotated key, a plug-in
back-end's own); these shapes catch it:

- a scheme and its credential: ``Bearer …``/``Basic …``, an ``Authorization`` value in a
  header line, a dict, a query or a header tuple (``(b'authorization', b'Token …')``),
  where the scheme word is kept;
- a named value: ``key=``/``api_key=``/``token=``/``password='…'`` parameters and
  assignments (``PGPASSWORD=…``, ``SLACK_SIGNING_SECRET=…``), ``"api_key": …``,
  ``"token": …`` and ``"secret": …`` fields, ``X-Api-Key: …`` lines, header tuples such as
  ``(b'x-api-key', …)``;
- a key by its prefix: OpenAI-style ``sk-…``, Groq, Hugging Face, GitHub, GitLab, Google,
  Slack (``xoxb-…``, ``xapp-…``) — with its dashes JSON-escaped (``sk\\u002d…``) too, and
  the part of it after a line break when the line was wrapped;
- Discord-token and JWT shapes (``id.time.hmac``, ``header.body.signature``), also when cut
  short;
- the password in ``scheme://user:password@``, which ends at the last ``@`` before a blank
  or a double quote, so it may hold ``/``, ``'`` or an unencoded ``@``.

Speed is part of the contract (redaction runs on every error body an edge sees, some of
them kilobytes long): every pattern starts with a literal (the regular-expression engine
then jumps between its occurrences instead of trying each position, and checks that a
word starts there only after), and the text is searched lowercased rather than
case-insensitively (many times faster), in a copy of the same length, so the spans found
there are the spans to mask. An escaped line break (``\\n``) counts as the break it
stands for: a word starts after it.
"""

from __future__ import annotations

import re

Span = tuple[int, int]

_WORD = "a-z0-9_-"
_BREAK = r"(?:\\[nrt]|[\r\n\t])+[ \t]*"  # a line break, escaped or real
# One character of a key, or a line break inside it when the wrapped rest holds a digit.
_UNIT = rf"(?:[a-z0-9_]|-|\\u002d|{_BREAK}(?=[a-z_-]*\d))"
_SCHEMES = r"(?:bearer|basic|token|bot|digest|apikey|key)"
# A value after ``=`` or ``:``: quoted (to the same quote, or the line's end when an error
# cut it short), else up to a blank or what ends a value in JSON, a dict or a query.
_VALUE = (
    r"[ \t]*(?:b?(?P<q>\\*[\"'])(?P<v>(?:[^\r\n\\]|\\.)*?)(?:(?P=q)|(?=[\r\n])|$)"
    r"|(?P<w>(?:[^\s\"'<>&#,;})\]\\]|\\u[0-9a-f]{4}|\\/)+))"
)


def _starting(literal: str) -> str:
    """``literal`` where a word starts (after no word character, or after an escaped line
    break), checked after the literal so the search can jump between its occurrences."""
    return rf"{literal}(?:(?<![{_WORD}]{literal})|(?<=\\[nrt]{literal}))"


_KEYS = tuple(re.compile(p) for p in (
    _starting("sk") + rf"(?:-|\\u002d)(?=(?:[a-z0-9_-]|\\u002d)*\d){_UNIT}{{20,}}",
    _starting("g") + rf"(?:sk|h[pousr]|ithub_pat|lpat)(?:[_-]|\\u002d|\\u005f){_UNIT}{{20,}}",
    _starting("hf") + rf"(?:_|\\u005f){_UNIT}{{20,}}",
    _starting("aiza") + rf"{_UNIT}{{30,}}",
    _starting("x") + rf"(?:ox[abposre]|app)(?:-|\\u002d){_UNIT}{{10,}}",
))
_BEARER = re.compile(
    _starting("b") + r"(?:earer|asic)(?:[ \t]+|%20|\+)(?P<v>[a-z0-9._~+/-]{8,}=*)")
_AUTHORIZATION = re.compile(
    r"authorization(?:[\"']?[ \t]*[:=][ \t]*(?:b?[\"'])?|[\"'][ \t]*,[ \t]*b?[\"'])"
    r"(?:[a-z]+(?:[ \t]+|%20|\+))?(?P<v>[^\s\"',;})\]\\]+)")
_HEADER_PAIR = re.compile(
    rf"\(b?[\"'](?P<name>[a-z0-9_-]{{2,40}})[\"'],[ \t]*b?(?P<q>[\"'])(?:{_SCHEMES}[ \t]+)?"
    r"(?P<v>[^\"'\r\n\\]+)")
_PAIR_NAME = re.compile(
    r"(?:authorization|pass(?:word|wd)?|pwd|secret|token|api[_-]?key|private[_-]?key"
    r"|signature|credentials?|cookie)$|^key$")
_DOTTED_HINT = re.compile(r"\.[a-z0-9_-]{4,}\.[a-z0-9_-]{10}")
_DOTTED = re.compile(
    r"(?<![a-z0-9_.-])[a-z0-9_-]{17,}\.[a-z0-9_-]{4,}\.[a-z0-9_-]{10,}(?![a-z0-9_-])")
_JWT = re.compile(_starting("eyj") + r"[a-z0-9_-]{10,}\.eyj[a-z0-9_-]*(?:\.[a-z0-9_-]*)?")
_USERINFO = re.compile(
    r"://[^:@/\s\"'<>]*:(?!\d{1,5}(?:[/\s\"'?#]|$))(?P<v>(?:[^\s\"<>\\]|\\[^nrt])*)@")
# Named values: one search per literal; the whole name must then pass `_names_a_secret`.
_NAMED = tuple(re.compile(rf"(?P<n>{stem})(?P<c>\\*[\"'])?[ \t]?(?P<s>[:=]){_VALUE}") for stem in (
    "p(?:ass(?:word|wd|phrase)?|wd)", "key", "token", "secret", "auth", "sig(?:nature)?",
    "bearer", "credentials?",
))
_KEY_NAME = re.compile(
    r"(?:^|[_-])(?:api|secret|private|access|signing|client|master|encryption|license)"
    r"[_-]?key$|^(?:api|x-api)?key$")
_WHOLE_WORD_ONLY = {"pass", "pwd", "auth", "sig", "signature", "bearer"}  # not "oauth="
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def view_of(text: str) -> str:
    """The text the shapes are searched in: lowercased, with one blank in front (every
    name then has a character before it); as long as ``text`` plus that one."""
    if "\u0130" in text:  # the one character whose lowercase is two
        text = text.replace("\u0130", "I")
    return " " + text.lower()


def spans(view: str) -> list[Span]:
    """Where in ``view`` (`view_of`) a credential is, as (start, end) in the text."""
    found: list[Span] = []
    for pattern in _KEYS:
        found += [_at(m) for m in pattern.finditer(view)]
    for pattern in (_BEARER, _AUTHORIZATION):
        found += [_at(m, "v") for m in pattern.finditer(view)]
    found += [_at(m) for m in _JWT.finditer(view)]
    if "@" in view:
        found += [_at(m, "v") for m in _USERINFO.finditer(view)]
    if "(" in view:
        found += [_at(m, "v") for m in _HEADER_PAIR.finditer(view)
                  if _PAIR_NAME.search(m["name"])]
    if _DOTTED_HINT.search(view):
        found += [_after_escape(view, m) for m in _DOTTED.finditer(view)
                  if any(c.isdigit() for c in m[0])]
    for pattern in _NAMED:
        found += [_at(m, "v" if m["v"] is not None else "w") for m in pattern.finditer(view)
                  if _names_a_secret(view, m)]
    return found


def _names_a_secret(view: str, found: re.Match[str]) -> bool:
    """Whether the whole name that ends in ``found``'s literal names a secret."""
    start = found.start()
    while view[start - 1] in _NAME_CHARS:
        start -= 1
    if view[start - 1] == "\\" and view[start] in "nrt":  # an escaped line break before
        start += 1
    name, word = view[start:found.end("n")], found["n"]
    plain = found["s"] == "=" or found["c"] is not None  # key=…, "key": … (not prose)
    if word == "key":  # "api_key: …" is a field; "press any key: then…" a sentence
        return bool(_KEY_NAME.search(name)) and (plain or name != word)
    if word in _WHOLE_WORD_ONLY:
        return name == word and plain
    if word in ("password", "passwd", "passphrase"):
        return True
    if word in ("token", "secret"):
        # "token: invalid" is a sentence; "token": …, token=…, x-auth-token: … are not.
        return plain or name != word
    return True


def _at(found: re.Match[str], group: str | int = 0) -> Span:
    return max(found.start(group) - 1, 0), found.end(group) - 1


def _after_escape(view: str, found: re.Match[str]) -> Span:
    start, end = _at(found)
    if view[start] == "\\" and view[start + 1] in "nrt":  # "\nMTA…": the token is after
        start += 1
    return start, end


def masked(text: str, where: list[Span], mask: str) -> str:
    """``text`` with every span of ``where`` (overlapping or not) replaced by ``mask``."""
    if not where:
        return text
    out: list[str] = []
    done = 0
    for start, end in sorted(where):
        if end <= done or start == end:
            continue
        start = max(start, done)
        out += [text[done:start], mask]
        done = end
    out.append(text[done:])
    return "".join(out)


def mask_shapes(text: str, mask: str) -> str:
    """``text`` with every credential-shaped part replaced by ``mask``."""
    return masked(text, spans(view_of(text)), mask)
