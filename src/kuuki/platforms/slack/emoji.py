"""Unicode emoji ↔ Slack reaction names.

Slack's ``reactions.add`` wants a name without colons (``eyes``, ``+1``); its events report
names the same way. The persona speaks unicode. A small table covers the persona's default
set and the emoji people use most; a name outside it passes through as ``:name:`` inbound,
and an unknown unicode emoji is refused outbound rather than swapped for another one.
"""

from __future__ import annotations

import re

_TABLE: dict[str, str] = {
    "👀": "eyes",
    "😊": "blush",
    "👍": "+1",
    "🤔": "thinking_face",
    "✨": "sparkles",
    "💡": "bulb",
    "👎": "-1",
    "😄": "smile",
    "😃": "smiley",
    "😀": "grinning",
    "😂": "joy",
    "🤣": "rolling_on_the_floor_laughing",
    "😅": "sweat_smile",
    "🙂": "slightly_smiling_face",
    "😉": "wink",
    "😍": "heart_eyes",
    "😢": "cry",
    "😭": "sob",
    "😮": "open_mouth",
    "😲": "astonished",
    "🙏": "pray",
    "👏": "clap",
    "🙌": "raised_hands",
    "💪": "muscle",
    "👋": "wave",
    "👌": "ok_hand",
    "🎉": "tada",
    "🔥": "fire",
    "💯": "100",
    "❤️": "heart",
    "❤": "heart",
    "⭐": "star",
    "🚀": "rocket",
    "✅": "white_check_mark",
    "❓": "question",
    "❗": "exclamation",
    "🙇": "bow",
    "🍵": "tea",
    "☕": "coffee",
    "🌸": "cherry_blossom",
    "💦": "sweat_drops",
    "😆": "laughing",
}
_BY_NAME: dict[str, str] = {}
for _uni, _name in _TABLE.items():
    _BY_NAME.setdefault(_name, _uni)
_BY_NAME.update({"thumbsup": "👍", "thumbsdown": "👎", "raised_hands": "🙌"})

_NAME = re.compile(r"^[a-z0-9_+'\-]+$")
_VARIATION = "\ufe0f"


def to_slack_name(emoji: str) -> str:
    """The reaction name for `emoji` (unicode, ``:name:`` or a bare name)."""
    e = emoji.strip()
    if e in _TABLE:
        return _TABLE[e]
    plain = e.replace(_VARIATION, "")
    if plain in _TABLE:
        return _TABLE[plain]
    name = e.strip(":").split("::")[0].lower()
    if _NAME.match(name):
        return name
    raise ValueError(f"no Slack reaction name known for emoji {emoji!r}")


def from_slack_name(name: str) -> str:
    """The unicode emoji for a reaction name when known, else ``:name:``.

    Skin tones (``+1::skin-tone-2``) are dropped: the engine cares which emoji, not which tone.
    """
    base = name.strip(":").split("::")[0]
    return _BY_NAME.get(base, f":{base}:")
