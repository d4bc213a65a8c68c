"""A known value in every spelling a text can carry it in.

A secret that reaches kuuki inside foreign text is rarely spelled as it was configured: a
JSON error body escapes ``/`` as ``\\/``, ``ä`` as ``\\u00e4`` or even ``-`` as
``\\u002d``; a Python ``repr`` of such a body doubles each backslash; a URL percent-encodes
it; a log line or a wrapped error breaks it with a real or an escaped line break; a bytes
``repr`` shows its UTF-8 as ``\\xc3\\xa4``; an HTML error page writes ``&amp;``. Two views of
the same rule, which must agree:

- `canonical` undoes every one of those spellings at once (escapes decoded, breaks and the
  indentation after them removed, percent-encoding and HTML entities decoded): a value is
  in a text only if its canonical form is in the text's canonical form. It runs on C-speed
  string operations and is cheap enough to check every text.
- `spelled` is a pattern that matches the value in the text *as written*, each character in
  any of its spellings and a break allowed between any two, so that exactly its span is
  masked and the rest of the text keeps its shape.
"""

from __future__ import annotations

import html
import re
from urllib.parse import unquote

# Each pattern starts with a literal backslash, so the search jumps between backslashes
# (several times faster than trying each position for "\\+").
_HEX_ESCAPE = re.compile(r"\\[xuU]")
_ESCAPED_BREAK = re.compile(r"\\\\*[nrt][ \t]*")
_BYTES = re.compile(r"\\\\*x[0-9a-fA-F]{2}(?:\\+x[0-9a-fA-F]{2})*")
_CODE = re.compile(r"\\\\*(?:u(?P<u>[0-9a-fA-F]{4})|U(?P<big>[0-9a-fA-F]{8}))")
_BEFORE_PUNCTUATION = re.compile(r"\\\\*(?=[^0-9A-Za-z\s])")
_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z]+);")
_LINE_BREAK = re.compile(r"[\r\n\t][ \t]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Between any two characters of a value: line breaks, escaped or real, and the indentation
# a wrapped line starts with.
BREAK = r"(?:(?:\\\\*[nrt]|[\r\n\t])[ \t]*)*"
_HTML = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}


def canonical(text: str) -> str:
    """``text`` with every spelling this module knows undone (module doc)."""
    if "\\" in text:
        text = _ESCAPED_BREAK.sub("", text)
    if "\\" in text:
        if _HEX_ESCAPE.search(text):
            text = _BYTES.sub(_bytes_of, text)
            text = _CODE.sub(_character_of, text)
            if _SURROGATE.search(text):
                text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        text = _BEFORE_PUNCTUATION.sub("", text)
    if "%" in text:
        text = unquote(text)
    if "&" in text:
        text = _ENTITY.sub(_entity_of, text)
    if "\n" in text or "\r" in text or "\t" in text:
        text = _LINE_BREAK.sub("", text)
    return text


def spelled(value: str) -> str:
    """A pattern (source) for ``value`` in any of its spellings, breaks between any two of
    its characters included."""
    return BREAK.join(_character(c) for c in value)


def _bytes_of(found: re.Match[str]) -> str:
    raw = bytes(int(h, 16) for h in re.findall(r"x([0-9a-fA-F]{2})", found.group()))
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _entity_of(found: re.Match[str]) -> str:
    return html.unescape(found.group())


def _character_of(found: re.Match[str]) -> str:
    code = int(found["u"] or found["big"], 16)
    return chr(code) if code <= 0x10FFFF else found.group()


def _character(c: str) -> str:
    """One character in each of its spellings (the ones `canonical` undoes)."""
    code = ord(c)
    forms = [re.escape(c)]
    if code > 0xFFFF:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms += [rf"\\\\*u{_hex(high, 4)}\\\\*u{_hex(low, 4)}", rf"\\\\*U{_hex(code, 8)}"]
    else:
        forms.append(rf"\\\\*u{_hex(code, 4)}")
    utf8 = c.encode()
    forms.append("".join(f"%{_hex(b, 2)}" for b in utf8))
    if code < 0x100:
        forms.append(rf"\\\\*x{_hex(code, 2)}")
    if code >= 0x80:
        forms.append("".join(rf"\\\\*x{_hex(b, 2)}" for b in utf8))
    elif not c.isalnum() and not c.isspace():
        forms.append(rf"\\\\*{re.escape(c)}")
    if c in _HTML:
        forms.append(f"&{_HTML[c]};")
    forms += [f"&#0*{code};", f"&#[xX]0*{_hex(code, 1)};"]
    return "(?:" + "|".join(forms) + ")"


def _hex(number: int, width: int) -> str:
    """``number`` in hexadecimal as a pattern that takes either case of each digit."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d
                   for d in f"{number:0{width}x}")
