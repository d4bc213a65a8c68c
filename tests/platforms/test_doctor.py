"""`kuuki doctor` against real parts: the local Discord and Slack protocol servers,
PostgreSQL, RabbitMQ and llama-cpp-python's OpenAI server with the shipped SmolLM2. One test
per problem it names, each asserting the printed line and the exit code, and the case where
everything passes."""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from kuuki.cli import main
from kuuki.cli.doctor import Endpoints, diagnose
from kuuki.cli.doctor.report import exit_code, render
from kuuki.platforms.tokens import SLACK_BOT_SCOPES
from kuuki.settings import load_settings
from kuuki.store import MIGRATIONS, migrate, normalise_url
from kuuki.testing.cluster import DISCORD_TOKEN
from kuuki.testing.discord_server import DiscordServer, serving
from kuuki.testing.llm_server import free_port, llama_server
from kuuki.testing.services import service_missing
from kuuki.testing.slack_server import SlackServer

REPO = Path(__file__).resolve().parents[2]
BOT_TOKEN = "xoxb-1234567890-0987654321-abcdefghijklmnopqrstuvwx"
APP_TOKEN = "xapp-1-A0KUUKI01-1234567890-abcdefghijklmnopqrstuvwxyz0123"


@pytest.fixture(scope="module")
def llama() -> Iterator[tuple[str, str, int]]:
    """(base_url, model, port) of llama-cpp-python's server running the shipped SmolLM2."""
    with llama_server() as server:
        yield server.base_url, server.model, int(server.base_url.rsplit(":", 1)[1].split("/")[0])


@pytest.fixture
async def discord() -> AsyncIterator[DiscordServer]:
    async with serving(DiscordServer(bot_name="Kuu", token=DISCORD_TOKEN)) as server:
        yield server


@pytest.fixture
async def slack() -> AsyncIterator[SlackServer]:
    server = SlackServer(bot_name="kuu")
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """A set-up with no platform, a new SQLite store and no model: each test adds its part."""
    monkeypatch.setenv("KUUKI_LLM", "none")
    monkeypatch.setenv("KUUKI_STORE_URL", f"sqlite:///{tmp_path}/kuuki.sqlite3")
    return monkeypatch


def nothing_local() -> Endpoints:
    """Two loopback ports nothing listens on, so this machine's own servers do not count."""
    return Endpoints(local_servers=((free_port(), "Ollama"), (free_port(), "llama.cpp")))


async def doctor(
    *, discord: DiscordServer | None = None, slack: SlackServer | None = None,
    ep: Endpoints | None = None,
) -> tuple[int, list[str]]:
    """What `kuuki doctor` prints (one line per check) and its exit code."""
    ep = ep or nothing_local()
    ep = Endpoints(discord_api=discord.api_base if discord else ep.discord_api,
                   slack_api=slack.api_url if slack else ep.slack_api,
                   local_servers=ep.local_servers)
    results = await diagnose(load_settings(), ep)
    out = io.StringIO()
    render(results, out, unicode=True)
    return exit_code(results), out.getvalue().splitlines()


def line(lines: list[str], name: str) -> str:
    found = [ln for ln in lines if re.match(rf"[✓✗·] {name}: ", ln)]
    assert len(found) == 1, lines
    return found[0]


def test_a_token_of_the_wrong_shape_is_named_without_showing_it(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("DISCORD_TOKEN", "hello-not-a-token")
    env.setenv("SLACK_BOT_TOKEN", APP_TOKEN)
    env.setenv("SLACK_APP_TOKEN", APP_TOKEN)
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "✓ settings: loaded (from the environment)"
    assert lines[1].startswith("✗ tokens: setting DISCORD_TOKEN (from the environment): this "
                               "does not look like a Discord bot token")
    assert lines[2] == ("✗ tokens: setting SLACK_BOT_TOKEN (from the environment): this is the "
                        "app-level token (xapp-…); this setting takes the bot user OAuth token "
                        "(xoxb-…)")
    assert not any("login" in ln for ln in lines)  # no login with a token that cannot be right
    assert lines[-1] == "2 problems found"
    assert "hello-not" not in out and "abcdefghij" not in out


def test_a_bad_setting_is_the_first_and_only_line(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "kuuki.toml"
    config.write_text('[persona]\nlanguage = "fr"\n', encoding="utf-8")
    env.setenv("KUUKI_CONFIG", str(config))
    assert main(["doctor"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"✗ settings: setting persona.language (from {config}): expected one of ja, en, "
        "got 'fr'",
        "1 problem found",
    ]


def test_a_terminal_without_utf8_gets_ok_and_fail_and_json_is_one_object(
    env: pytest.MonkeyPatch,
) -> None:
    env.setenv("DISCORD_TOKEN", "hello-not-a-token")
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    env.setattr("sys.stdout", ascii_out)
    assert main(["doctor"]) == 1
    ascii_out.seek(0)
    lines = ascii_out.read().splitlines()
    assert lines[0] == "ok   settings: loaded (from the environment)"
    assert lines[1].startswith("FAIL tokens: setting DISCORD_TOKEN (from the environment): ")
    assert lines[1].endswith("copy it again from the Developer Portal -> your application -> "
                             "Bot -> Reset Token")
    json_out = io.StringIO()
    env.setattr("sys.stdout", json_out)
    assert main(["doctor", "--json"]) == 1
    doc = json.loads(json_out.getvalue())
    assert doc["ok"] is False
    assert [(c["name"], c["ok"]) for c in doc["checks"]][:2] == [
        ("settings", True), ("tokens", False)]
    assert "hello-not" not in json_out.getvalue()


def test_usage_errors_exit_2(env: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["doctor", "--no-such-option"])
    assert exc.value.code == 2


async def test_a_login_refused_by_discord_says_where_to_get_a_new_token(
    env: pytest.MonkeyPatch, discord: DiscordServer
) -> None:
    env.setenv("DISCORD_TOKEN", DISCORD_TOKEN.replace("GkUuKi", "XxXxXx"))
    code, lines = await doctor(discord=discord)
    assert code == 1
    assert line(lines, "tokens") == f"✓ tokens: DISCORD_TOKEN …({len(DISCORD_TOKEN)} chars)"
    assert line(lines, "discord login") == (
        "✗ discord login: Discord refused DISCORD_TOKEN (401 Unauthorized): it was reset or "
        "belongs to another application — copy a new one: Developer Portal "
        "(https://discord.com/developers/applications) → your application → Bot → Reset "
        "Token, and set DISCORD_TOKEN")
    assert discord.requests[0].path == "/users/@me"


async def test_the_message_content_intent_off_is_named_with_where_to_turn_it_on(
    env: pytest.MonkeyPatch, discord: DiscordServer
) -> None:
    env.setenv("DISCORD_TOKEN", DISCORD_TOKEN)
    discord.application_flags = 0
    code, lines = await doctor(discord=discord)
    assert code == 1
    assert line(lines, "discord login").startswith("✓ discord login: logged in as Kuu")
    assert line(lines, "discord intents") == (
        "✗ discord intents: the MESSAGE CONTENT intent is off: Discord would refuse the "
        "connection, and kuuki cannot read the room without message text — switch it on: "
        "Developer Portal (https://discord.com/developers/applications) → your application → "
        "Bot → Privileged Gateway Intents → MESSAGE CONTENT INTENT, and save")


async def test_missing_slack_scopes_are_listed(
    env: pytest.MonkeyPatch, slack: SlackServer
) -> None:
    env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    env.setenv("SLACK_APP_TOKEN", APP_TOKEN)
    slack.scopes = [s for s in slack.scopes if s not in ("im:history", "reactions:write")]
    code, lines = await doctor(slack=slack)
    assert code == 1
    assert line(lines, "slack login") == "✓ slack login: logged in as kuu in kuuki-test (T0KUUKI01)"
    assert line(lines, "slack scopes") == (
        "✗ slack scopes: the bot token lacks im:history, reactions:write — add them: "
        "api.slack.com/apps → your app → OAuth & Permissions → Bot Token Scopes (or paste the "
        "README's manifest), then Reinstall to Workspace")
    assert line(lines, "slack socket mode").startswith("✓ ")


async def test_a_slack_login_refused_names_the_setting(
    env: pytest.MonkeyPatch, slack: SlackServer
) -> None:
    env.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    env.setenv("SLACK_APP_TOKEN", APP_TOKEN)
    slack.refuse_token(BOT_TOKEN)
    code, lines = await doctor(slack=slack)
    assert code == 1
    assert line(lines, "slack login").startswith(
        "✗ slack login: Slack refused SLACK_BOT_TOKEN (invalid_auth) — copy the Bot User OAuth "
        "Token (xoxb-…) again")
    assert not any("slack scopes" in ln for ln in lines)


async def test_a_store_it_cannot_reach_is_named_without_its_password(
    env: pytest.MonkeyPatch,
) -> None:
    port = free_port()
    env.setenv("KUUKI_STORE_URL", f"postgresql://kuuki:s3cretpw@127.0.0.1:{port}/kuuki")
    code, lines = await doctor()
    assert code == 1
    assert line(lines, "store") == (
        f"✗ store: cannot connect to postgresql+asyncpg://kuuki:***@127.0.0.1:{port}/kuuki: "
        "connection refused — is the database running and reachable? check KUUKI_STORE_URL "
        "(store.url)")
    assert "s3cretpw" not in "\n".join(lines)


async def test_a_store_with_migrations_not_current_names_the_pending_ones(
    env: pytest.MonkeyPatch, postgres_url: str
) -> None:
    engine = create_async_engine(normalise_url(postgres_url))
    try:
        await migrate(engine, upto=3)
    finally:
        await engine.dispose()
    env.setenv("KUUKI_STORE_URL", postgres_url)
    code, lines = await doctor()
    assert code == 1
    pending = [f"m{m.version:03d}_{m.name}" for m in MIGRATIONS if m.version > 3]
    assert line(lines, "store").endswith(
        f": migrations not current, {len(pending)} of {len(MIGRATIONS)} pending "
        f"({', '.join(pending)}) — back the database up, then run `kuuki store migrate` (or "
        "start `kuuki run` once: it applies them on start)")


async def test_an_empty_database_passes_and_is_left_empty(
    env: pytest.MonkeyPatch, postgres_url: str
) -> None:
    env.setenv("KUUKI_STORE_URL", postgres_url)
    _, lines = await doctor()
    assert line(lines, "store").endswith(
        ": connected, empty: `kuuki run` creates the tables on its first start")
    engine = create_async_engine(normalise_url(postgres_url))
    try:
        async with engine.connect() as conn:
            tables = await conn.scalar(text(
                "select count(*) from pg_tables where schemaname = current_schema()"))
    finally:
        await engine.dispose()
    assert tables == 0  # doctor reads; it never creates or migrates


async def test_a_broker_it_cannot_reach_is_named(env: pytest.MonkeyPatch) -> None:
    port = free_port()
    env.setenv("KUUKI_BROKER_URL", f"amqp://kuuki:brokerpw@127.0.0.1:{port}/")
    code, lines = await doctor()
    assert code == 1
    assert line(lines, "broker").startswith(
        f"✗ broker: cannot reach the broker at amqp://kuuki:***@127.0.0.1:{port}/ "
        "(KUUKI_BROKER_URL)")
    assert "brokerpw" not in "\n".join(lines)


async def test_a_model_server_that_does_not_answer_is_named(env: pytest.MonkeyPatch) -> None:
    port = free_port()
    env.setenv("KUUKI_LLM", "openai")
    env.setenv("KUUKI_LLM_BASE_URL", f"http://127.0.0.1:{port}/v1")
    env.setenv("KUUKI_LLM_MODEL", "qwen2.5:3b")
    code, lines = await doctor()
    assert code == 1
    model = line(lines, "model")
    assert model.startswith(f"✗ model: openai qwen2.5:3b at http://127.0.0.1:{port}/v1 did not "
                            "answer: cannot connect")
    assert model.endswith("— start the server, or correct base_url and model in kuuki.toml "
                          "[llm] (KUUKI_LLM_BASE_URL, KUUKI_LLM_MODEL)")


async def test_no_local_model_server_is_a_note_beside_the_shipped_model(
    env: pytest.MonkeyPatch, discord: DiscordServer
) -> None:
    env.delenv("KUUKI_LLM")  # the default: the embedded SmolLM2
    env.setenv("DISCORD_TOKEN", DISCORD_TOKEN)
    ep = nothing_local()
    code, lines = await doctor(discord=discord, ep=ep)
    (p1, _), (p2, _) = ep.local_servers
    assert line(lines, "model").startswith("✓ model: embedded (the shipped SmolLM2) answered in ")
    assert line(lines, "local model server") == (
        f"· local model server: none on 127.0.0.1 ports {p1} (Ollama), {p2} (llama.cpp); the "
        "shipped SmolLM2 is in use (tiny: fine to try kuuki, not for a community)")
    assert code == 0 and lines[-1] == "all checks passed"  # a note fails nothing


async def test_a_local_model_server_is_found_and_its_lines_of_kuuki_toml_work(
    env: pytest.MonkeyPatch, discord: DiscordServer, llama: tuple[str, str, int],
    tmp_path: Path,
) -> None:
    env.delenv("KUUKI_LLM")
    env.setenv("DISCORD_TOKEN", DISCORD_TOKEN)
    base_url, model, port = llama
    ep = Endpoints(local_servers=((free_port(), "Ollama"), (port, "llama.cpp")))
    _, lines = await doctor(discord=discord, ep=ep)
    at = lines.index(line(lines, "local model server"))
    assert lines[at] == "· local model server: 1 found"
    shown = [ln.strip() for ln in lines[at + 1:at + 7]]
    assert shown[0] == f"llama.cpp on 127.0.0.1:{port}: {model}"
    toml = shown[2:]
    assert toml == ["[llm]", 'backend = "openai"', f'base_url = "{base_url}"',
                    f'model = "{model}"']
    # The printed lines, pasted into kuuki.toml, are a set-up whose model answers.
    config = tmp_path / "kuuki.toml"
    config.write_text("\n".join(toml) + "\n", encoding="utf-8")
    env.setenv("KUUKI_CONFIG", str(config))
    code, lines = await doctor(discord=discord, ep=ep)
    assert line(lines, "model").startswith(f"✓ model: openai {model} at {base_url} answered in ")
    assert not any("local model server" in ln for ln in lines)
    assert code == 0


async def test_everything_passes_on_real_parts(
    env: pytest.MonkeyPatch, discord: DiscordServer, slack: SlackServer, postgres_url: str,
    llama: tuple[str, str, int],
) -> None:
    amqp = os.environ.get("KUUKI_TEST_AMQP_URL", "")
    if not amqp:
        service_missing("RabbitMQ", "KUUKI_TEST_AMQP_URL is not set")
    engine = create_async_engine(normalise_url(postgres_url))
    try:
        await migrate(engine)
    finally:
        await engine.dispose()
    base_url, model, _ = llama
    for key, value in {
        "DISCORD_TOKEN": DISCORD_TOKEN, "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN, "KUUKI_STORE_URL": postgres_url,
        "KUUKI_BROKER_URL": amqp, "KUUKI_LLM": "openai", "KUUKI_LLM_BASE_URL": base_url,
        "KUUKI_LLM_MODEL": model,
    }.items():
        env.setenv(key, value)
    code, lines = await doctor(discord=discord, slack=slack)
    names = [ln.split(":", 1)[0] for ln in lines[:-1]]
    assert names == ["✓ settings", "✓ tokens", "✓ discord login", "✓ discord intents",
                     "✓ slack login", "✓ slack scopes", "✓ slack socket mode", "✓ store",
                     "✓ broker", "✓ model"], lines
    assert line(lines, "tokens") == (
        f"✓ tokens: DISCORD_TOKEN …({len(DISCORD_TOKEN)} chars), SLACK_BOT_TOKEN "
        f"xoxb-…({len(BOT_TOKEN)} chars), SLACK_APP_TOKEN xapp-…({len(APP_TOKEN)} chars)")
    assert line(lines, "store").endswith(
        f": connected, schema current (version {MIGRATIONS[-1].version})")
    assert re.fullmatch(rf"✓ model: openai {model} at {re.escape(base_url)} answered in "
                        rf"\d+ ms \({model}\)", line(lines, "model"))
    assert lines[-1] == "all checks passed" and code == 0
    every = "\n".join(lines)
    assert all(t not in every for t in (DISCORD_TOKEN, BOT_TOKEN[5:], APP_TOKEN[5:]))


def test_the_slack_scopes_checked_are_the_readme_manifest_s() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("oauth_config:", 1)[1].split("settings:", 1)[0]
    assert re.findall(r"^      - (\S+)$", block, re.M) == list(SLACK_BOT_SCOPES)


async def test_a_policy_for_a_channel_never_seen_is_a_warning_with_a_guess(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from datetime import UTC, datetime

    from kuuki.domain import Channel
    from kuuki.store import Store

    store = await Store.open(f"sqlite:///{tmp_path}/kuuki.sqlite3")
    try:
        await store.roster.upsert_channel(Channel("C1", "support"))
        await store.roster.upsert_channel(Channel("C2", "random"))
    finally:
        await store.close()
    env.setenv("KUUKI_CHANNEL_POLICY", json.dumps(
        {"#support": {"mode": "asked"}, "suport-desk": {"mode": "listen"},
         "C2": {"readiness": 10}}))
    _, lines = await doctor()  # (no platform token: that line fails, not this one)
    at = lines.index(line(lines, "channel policy"))
    assert lines[at] == ("· channel policy: 3 in KUUKI_CHANNEL_POLICY, 0 changed by /kuuki "
                         "mode; 1 not found")
    assert lines[at + 1].strip() == (
        "no channel 'suport-desk' has been seen by this bot (a typo, or a channel it has not "
        "joined yet); did you mean support?")

    store = await Store.open(f"sqlite:///{tmp_path}/kuuki.sqlite3")
    try:
        await store.policies.save("C1", {"mode": "shout"}, "u1", datetime.now(UTC))
    finally:
        await store.close()
    _, lines = await doctor()
    assert line(lines, "channel policy") == (
        "✗ channel policy: the change stored for channel C1 is refused: mode: expected one of "
        "member, asked, listen, got text 'shout' — set it again with `/kuuki mode` in that "
        "channel, or `/kuuki mode reset` there")
