"""What one Slack message says: its text, its files and its attachments, as one text.

Slack puts words in three places. The ``text`` is the author's; ``files`` are
noted as ``[file: name]``; ``attachments[]`` hold three kinds of thing, told apart by
their fields:

- **a shared or forwarded message**, or the unfurl of a link to a Slack message
  (``is_share`` or ``is_msg_unfurl``): someone else's words. They become a marked block
  (kuuki.text.quoted, ``[shared message from <author>]`` and ``> `` lines), the author
  the directory's name for ``author_id``, else ``author_name``/``author_subname``; the
  words are the attachment's ``text``, else its ``fallback``;
- **the preview of a web page** (``from_url``/``original_url``/``app_unfurl_url`` without
  the above): not anyone's words in the channel; skipped;
- **an app's own content** (GitHub, CI, incoming webhooks: anything else): plain lines,
  they are the poster's words: ``pretext``, ``title`` (with ``title_link``), ``text``,
  ``fields`` (``title: value``), else the ``fallback``.

Everything is rendered through `Directory.render` (attachments are Slack markup too), so
a mention inside a share or an app post is a mention. One message looks at most
`MAX_ATTACHMENTS` attachments, its users are looked up within one allowance
(kuuki.platforms.slack.names.Lookups), and the whole is cut at `MAX_TEXT`: a hostile
payload costs no more than a long message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuuki.platforms.slack.names import Directory, Lookups, Rendered
from kuuki.text.quoted import SHARED, quote_block, with_quotes

MAX_TEXT = 40_000  # Slack's own limit for a message; anything longer is not a real message
MAX_ATTACHMENTS = 5
MAX_FILES = 5
MAX_FIELDS = 10
_UNFURL_KEYS = ("from_url", "original_url", "app_unfurl_url", "is_app_unfurl")


def is_share(att: Mapping[str, Any]) -> bool:
    """Someone's message brought in: a share, a forward, a Slack message link unfurled."""
    return bool(att.get("is_share") or att.get("is_msg_unfurl"))


def readable(attachments: Any) -> list[Mapping[str, Any]]:
    """The attachments whose words the bot reads (shares and app content; not web
    previews), at most `MAX_ATTACHMENTS`."""
    if not isinstance(attachments, list):
        return []
    found = [
        a for a in attachments
        if isinstance(a, Mapping) and (is_share(a) or not any(a.get(k) for k in _UNFURL_KEYS))
    ]
    return found[:MAX_ATTACHMENTS]


async def message_content(directory: Directory, raw: Mapping[str, Any], text: str) -> Rendered:
    """The text the bot reads of a message (`text` is its validated ``text``) and the user
    ids it mentions, attachments included (module doc)."""
    lookups = Lookups()
    rendered = await directory.render(text, lookups=lookups)
    first = " ".join(p for p in (rendered.text, *file_notes(raw.get("files"))) if p)
    mentions = list(rendered.mentions)
    parts: list[str] = []
    room = MAX_TEXT - len(first)
    for att in readable(raw.get("attachments")):
        if room <= 0:
            break
        part = await (_shared(directory, att, lookups, room) if is_share(att)
                      else _app_lines(directory, att, lookups, room))
        if part.text:
            parts.append(part.text)
            mentions += part.mentions
            room -= len(part.text) + 1
    return Rendered(with_quotes(first, parts)[:MAX_TEXT], tuple(dict.fromkeys(mentions)))


async def _shared(
    directory: Directory, att: Mapping[str, Any], lookups: Lookups, room: int
) -> Rendered:
    words = _str(att.get("text")) or _str(att.get("fallback"))
    body = await directory.render(words[:room], lookups=lookups)
    hint = _str(att.get("author_name")) or _str(att.get("author_subname")) or None
    author_id = att.get("author_id")
    author = (
        await directory.name_of(author_id, hint=hint, lookups=lookups)
        if isinstance(author_id, str) and author_id else hint
    )
    return Rendered(quote_block(SHARED, body.text, author=author), body.mentions)


async def _app_lines(
    directory: Directory, att: Mapping[str, Any], lookups: Lookups, room: int
) -> Rendered:
    lines = [_str(att.get(key)) for key in ("pretext", "title", "text")]
    link = _str(att.get("title_link"))
    if lines[1] and link and "<" not in lines[1]:
        lines[1] = f"<{link}|{lines[1]}>"
    fields = att.get("fields")
    for f in fields[:MAX_FIELDS] if isinstance(fields, list) else []:
        if isinstance(f, Mapping):
            title, value = _str(f.get("title")), _str(f.get("value"))
            lines.append(f"{title}: {value}" if title and value else title or value)
    words = "\n".join(line for line in lines if line.strip()) or _str(att.get("fallback"))
    return await directory.render(words[:room], lookups=lookups)


def file_notes(files: Any) -> list[str]:
    """``[file: name]`` for each file (``[file]`` when Slack gives it no name)."""
    if not isinstance(files, list):
        return []
    notes = []
    for f in files[:MAX_FILES]:
        if isinstance(f, Mapping):
            name = _str(f.get("name")) or _str(f.get("title"))
            notes.append(f"[file: {name}]" if name else "[file]")
    return notes


def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
