"""Platform tokens: which platforms `kuuki run` starts, and tokens checked for shape first.

A token of the wrong shape (`DISCORD_TOKEN=hello`, a Slack token pasted into the other
setting) is refused here, before any connection, with the setting named the way the user
wrote it; the platform itself is asked only about tokens that could be right. No message
ever contains a token.
"""

from __future__ import annotations

import re

from kuuki.errors import ConfigError
from kuuki.settings import Settings

# Discord bot tokens are three base64url parts: user id, timestamp, HMAC.
_DISCORD = re.compile(r"[A-Za-z0-9_-]{17,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{20,}")
_PORTAL = "Developer Portal → your application → Bot → Reset Token"


def _discord_problem(token: str) -> str | None:
    if token.lower().startswith("bot "):
        return "remove the 'Bot ' before the token: kuuki adds it itself"
    if token.startswith(("xoxb-", "xapp-", "xoxp-")):
        return "this is a Slack token; a Discord bot token comes from the " + _PORTAL
    if not _DISCORD.fullmatch(token):
        return (
            "this does not look like a Discord bot token (three parts separated by dots, "
            f"about 70 characters); copy it again from the {_PORTAL}"
        )
    return None


def _slack_problem(token: str, prefix: str, what: str) -> str | None:
    if token.startswith(prefix) and len(token) > len(prefix) + 8:
        return None
    other = {"xoxb-": "app-level token (xapp-…)", "xapp-": "bot token (xoxb-…)"}[prefix]
    if token.startswith(("xoxb-", "xapp-")) and not token.startswith(prefix):
        return f"this is the {other}; this setting takes the {what} ({prefix}…)"
    return f"expected the {what}, which starts with {prefix}"


# The bot token scopes kuuki needs on Slack: the manifest in the README's Slack set-up
# (tests/platforms/test_doctor.py holds the two equal); `kuuki doctor` compares them with
# the scopes Slack reports for the token.
SLACK_BOT_SCOPES: tuple[str, ...] = (
    "app_mentions:read", "channels:history", "channels:read", "chat:write", "commands",
    "groups:history", "groups:read", "im:history", "im:read", "reactions:read",
    "reactions:write", "users:read",
)


def check_token_shapes(settings: Settings) -> None:
    """Raise ConfigError for the first set token that cannot be right."""
    problems = token_problems(settings)
    if problems:
        raise problems[0]


def token_problems(settings: Settings) -> list[ConfigError]:
    """A ConfigError for every set token that cannot be right, in the order of the
    settings (`kuuki doctor` names them all; `kuuki run` stops at the first)."""
    found: list[ConfigError] = []
    checks = (
        ("discord_token", settings.discord_token, _discord_problem),
        ("slack_bot_token", settings.slack_bot_token,
         lambda t: _slack_problem(t, "xoxb-", "bot user OAuth token")),
        ("slack_app_token", settings.slack_app_token,
         lambda t: _slack_problem(t, "xapp-", "app-level token with connections:write")),
    )
    for attr, token, problem_of in checks:
        problem = problem_of(token.strip()) if token else None
        if problem:
            found.append(settings.error(attr, problem))
    return found


def token_shape(token: str) -> str:
    """How a token may be shown: its kind's prefix and its length, never more
    (``xoxb-…(57 chars)``)."""
    token = token.strip()
    prefix = next((p for p in ("xoxb-", "xapp-", "xoxp-") if token.startswith(p)), "")
    return f"{prefix}…({len(token)} chars)"


def platforms_to_run(settings: Settings) -> list[str]:
    """Which platforms have their tokens; a ConfigError that says what to set if none."""
    found: list[str] = []
    if settings.discord_token:
        found.append("discord")
    bot, app_token = settings.slack_bot_token, settings.slack_app_token
    if app_token and not bot:
        raise settings.error(
            "slack_bot_token",
            f"{settings.key_of('slack_app_token')[0]} is set but the bot token (xoxb-…) "
            "is missing",
        )
    # The HTTP Events API needs no app-level token; its signing secret is checked with
    # the other settings (kuuki.settings.validate).
    if bot and not app_token and settings.slack_mode == "socket":
        raise settings.error(
            "slack_app_token",
            f"{settings.key_of('slack_bot_token')[0]} is set but Socket Mode also needs the "
            "app-level token (xapp-…, scope connections:write); or set slack.mode = "
            '"http" for the HTTP Events API',
        )
    if bot:
        found.append("slack")
    if not found:
        raise settings.error(
            "discord_token",
            "no platform token is set: set DISCORD_TOKEN for Discord, or SLACK_BOT_TOKEN and "
            "SLACK_APP_TOKEN for Slack (environment or kuuki.toml [discord]/[slack]). "
            "To try kuuki locally without any account: `kuuki playground` or `kuuki chat`",
        )
    check_token_shapes(settings)
    return found
