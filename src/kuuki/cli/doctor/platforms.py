"""The platform checks of `kuuki doctor`: the tokens' shapes, as `kuuki run` checks them,
then one live login per configured platform over the platforms' own REST APIs (Discord's
``/users/@me`` and the application's intent flags; Slack's ``auth.test``, its scopes and
Socket Mode). Tokens are only ever shown as their kind and length."""

from __future__ import annotations

from typing import Any

import aiohttp

from kuuki.cli.doctor.report import Endpoints, Result, failed, passed
from kuuki.errors import ConfigError
from kuuki.platforms.tokens import (
    SLACK_BOT_SCOPES,
    platforms_to_run,
    token_problems,
    token_shape,
)
from kuuki.settings import Settings

# Application flags: the privileged MESSAGE CONTENT intent, on for a verified app or for an
# app in fewer than 100 servers ("limited"); either one lets the gateway send message text.
GATEWAY_MESSAGE_CONTENT = 1 << 18
GATEWAY_MESSAGE_CONTENT_LIMITED = 1 << 19
_PORTAL = "Developer Portal (https://discord.com/developers/applications) → your application"


async def check_platforms(settings: Settings, ep: Endpoints) -> tuple[list[Result], list[str]]:
    """The token lines, and the platforms whose tokens are good enough to log in with."""
    problems = token_problems(settings)
    results = [failed("tokens", str(p)) for p in problems]
    try:
        names = platforms_to_run(settings)
    except ConfigError as exc:
        if not problems:
            results.append(failed("platforms", str(exc)))
        return results, []
    shown = [
        f"{settings.key_of(attr)[0]} {token_shape(token)}"
        for attr, token in (
            ("discord_token", settings.discord_token),
            ("slack_bot_token", settings.slack_bot_token),
            ("slack_app_token", settings.slack_app_token),
        )
        if token
    ]
    results.append(passed("tokens", ", ".join(shown)))
    return results, names


async def _call(
    http: aiohttp.ClientSession, method: str, url: str, token: str
) -> tuple[int, Any, dict[str, str]]:
    async with http.request(method, url, headers={"Authorization": token}) as resp:
        try:
            body = await resp.json(content_type=None)
        except ValueError:
            body = None
        return resp.status, body, dict(resp.headers)


def _unreachable(platform: str, url: str, exc: Exception) -> Result:
    why = "timed out" if isinstance(exc, TimeoutError) else (
        "connection refused" if isinstance(exc, aiohttp.ClientConnectorError) else
        type(exc).__name__
    )
    return failed(f"{platform} login", f"cannot reach {url} ({why})",
                  "check the network, a proxy or a firewall")


async def check_discord(settings: Settings, ep: Endpoints) -> list[Result]:
    key = settings.key_of("discord_token")[0]
    token = "Bot " + settings.discord_token.strip()
    base = ep.discord_api.rstrip("/")
    try:
        async with aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=ep.http_timeout_s)
        ) as http:
            status, me, _ = await _call(http, "GET", base + "/users/@me", token)
            if status == 401:
                return [failed(
                    "discord login", f"Discord refused {key} (401 Unauthorized): it was reset "
                    "or belongs to another application",
                    f"copy a new one: {_PORTAL} → Bot → Reset Token, and set {key}")]
            if status != 200 or not isinstance(me, dict):
                return [failed("discord login", f"Discord answered {status} to /users/@me",
                               "try again later; see https://discordstatus.com")]
            status, app, _ = await _call(http, "GET", base + "/oauth2/applications/@me", token)
    except (aiohttp.ClientError, TimeoutError) as exc:
        return [_unreachable("discord", base, exc)]
    results = [passed("discord login", f"logged in as {me.get('username', '?')} "
                      f"(bot user {me.get('id', '?')})")]
    if status != 200 or not isinstance(app, dict):
        results.append(failed("discord intents", f"Discord answered {status} to "
                              "/oauth2/applications/@me", "try again later"))
        return results
    flags = int(app.get("flags") or 0)
    if flags & (GATEWAY_MESSAGE_CONTENT | GATEWAY_MESSAGE_CONTENT_LIMITED):
        results.append(passed("discord intents", "MESSAGE CONTENT intent on"))
    else:
        results.append(failed(
            "discord intents", "the MESSAGE CONTENT intent is off: Discord would refuse the "
            "connection, and kuuki cannot read the room without message text",
            f"switch it on: {_PORTAL} → Bot → Privileged Gateway Intents → MESSAGE CONTENT "
            "INTENT, and save"))
    return results


async def check_slack(settings: Settings, ep: Endpoints) -> list[Result]:
    key = settings.key_of("slack_bot_token")[0]
    base = ep.slack_api.rstrip("/") + "/"
    try:
        async with aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=ep.http_timeout_s)
        ) as http:
            bearer = "Bearer " + settings.slack_bot_token.strip()
            _, auth, headers = await _call(http, "POST", base + "auth.test", bearer)
            if not isinstance(auth, dict) or not auth.get("ok"):
                error = auth.get("error") if isinstance(auth, dict) else "no answer"
                return [failed(
                    "slack login", f"Slack refused {key} ({error})",
                    "copy the Bot User OAuth Token (xoxb-…) again from api.slack.com/apps → "
                    f"your app → OAuth & Permissions (reinstall the app if it was revoked), "
                    f"and set {key}")]
            results = [passed("slack login", f"logged in as {auth.get('user', '?')} in "
                              f"{auth.get('team', '?')} ({auth.get('team_id', '?')})")]
            results.append(_scopes(headers))
            if settings.slack_mode == "socket":
                results.append(await _socket_mode(settings, http, base))
    except (aiohttp.ClientError, TimeoutError) as exc:
        return [_unreachable("slack", base, exc)]
    return results


def _scopes(headers: dict[str, str]) -> Result:
    raw = next((v for k, v in headers.items() if k.lower() == "x-oauth-scopes"), None)
    if raw is None:
        return failed("slack scopes", "Slack did not say which scopes the bot token has "
                      "(no x-oauth-scopes header)", "compare them by hand with the README's "
                      "manifest: api.slack.com/apps → your app → OAuth & Permissions")
    granted = {s.strip() for s in raw.split(",") if s.strip()}
    missing = [s for s in SLACK_BOT_SCOPES if s not in granted]
    if missing:
        return failed(
            "slack scopes", f"the bot token lacks {', '.join(missing)}",
            "add them: api.slack.com/apps → your app → OAuth & Permissions → Bot Token "
            "Scopes (or paste the README's manifest), then Reinstall to Workspace")
    return passed("slack scopes", f"all {len(SLACK_BOT_SCOPES)} scopes kuuki needs")


async def _socket_mode(settings: Settings, http: aiohttp.ClientSession, base: str) -> Result:
    key = settings.key_of("slack_app_token")[0]
    bearer = "Bearer " + settings.slack_app_token.strip()
    _, body, _ = await _call(http, "POST", base + "apps.connections.open", bearer)
    if isinstance(body, dict) and body.get("ok"):
        return passed("slack socket mode", "the app-level token opens a Socket Mode connection")
    error = body.get("error") if isinstance(body, dict) else "no answer"
    return failed(
        "slack socket mode", f"Slack refused {key} for Socket Mode ({error})",
        "api.slack.com/apps → your app → Socket Mode: switch it on; Basic Information → "
        f"App-Level Tokens: a token with connections:write, set as {key}")
