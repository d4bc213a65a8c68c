"""The one redaction step (kuuki.text.secrets): each kind of configured secret, each
credential shape, and ordinary text left alone."""

from __future__ import annotations

import base64
import io
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from kuuki.settings import load_settings, remember_secrets
from kuuki.settings.urls import mask_raw
from kuuki.text.secrets import (
    MASK,
    SECRETS,
    RedactingFilter,
    Secrets,
    mask_userinfo,
    redact,
    remember_url,
)

KEY = "sk-proj-Abc123Def456Ghi789Jkl012"
JUDGE_KEY = "judge-key-7f6e5d4c3b2a1900"
DISCORD = "MTA4NzY1NDMyMTA5ODc2NTQzMjE.GkUuKi.a-local-test-token-shape"
SLACK_BOT = "xoxb-1111111111-2222222222-BotTokenValue"
SLACK_APP = "xapp-1-A0123456789-1234567890123-appvalue"
SIGNING = "8f2c1b0e9d7a6c5b4a3f2e1d0c9b8a7f"
DB_PW = "db-pass/w%rd"  # needs percent-encoding in a URL
BROKER_PW = "broker-pw-91a8"
PROXY_PW = "proxy-pw-3c2d"
HEADER = "hdr-tok-5d4c3b2a1908"


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "kuuki.toml"
    config.write_text(f"""
[llm]
backend = "openai"
model = "m"
base_url = "https://proxy:{PROXY_PW}@llm.example/v1"
api_key = "{KEY}"

[judge_llm]
backend = "openai"
model = "j"
api_key = "{JUDGE_KEY}"

[store]
url = "postgresql://bot:db-pass%2Fw%25rd@db.example/kuuki"

[broker]
url = "amqp://kuuki:{BROKER_PW}@mq.example:5672/"

[discord]
token = "{DISCORD}"

[slack]
bot_token = "{SLACK_BOT}"
app_token = "{SLACK_APP}"
signing_secret = "{SIGNING}"

[[tools.http]]
name = "lookup"
description = "look it up"
url = "https://api.example/x"
headers = {{ Authorization = "Token ${{HDR}}" }}
""")
    return config


@pytest.mark.parametrize("secret", [
    KEY, JUDGE_KEY, DISCORD, SLACK_BOT, SLACK_APP, SIGNING, DB_PW, "db-pass%2Fw%25rd",
    BROKER_PW, PROXY_PW, HEADER, f"Token {HEADER}",
    base64.b64encode(f"proxy:{PROXY_PW}".encode()).decode(),
])
def test_every_configured_secret_is_known_once_the_settings_are_loaded(
    tmp_path: Path, secret: str
) -> None:
    said = f"the server said: {secret} (again: '{secret}')"
    assert secret in redact(said, shapes=False)  # not known before
    load_settings(env={"HDR": HEADER}, path=_config(tmp_path))
    out = redact(said, shapes=False)
    assert secret not in out and out == f"the server said: {MASK} (again: '{MASK}')"


def test_settings_made_in_code_are_registered_by_remember_secrets(tmp_path: Path) -> None:
    s = load_settings(env={"HDR": HEADER}, path=_config(tmp_path))
    SECRETS.restore(())
    assert KEY in redact(KEY, shapes=False)
    remember_secrets(s)
    assert redact(f"{KEY} {SIGNING} {DISCORD}", shapes=False) == f"{MASK} {MASK} {MASK}"


@pytest.mark.parametrize(("text", "expected"), [
    ("Authorization: Bearer abcdEFGH1234", "Authorization: Bearer ***"),
    ("bearer abcdefgh12345678", "bearer ***"),
    ("Basic dXNlcjpwYXNzd29yZA==", "Basic ***"),
    ("{'authorization': 'Bot MTIzNDU2'}", "{'authorization': 'Bot ***'}"),
    ("Incorrect API key provided: sk-abcdefghij0123456789xyz.", "Incorrect API key provided: ***."),
    ("key sk-ant-api03-abcdefghij0123456789", "key ***"),
    ("gsk_abcdefghijklmnopqrstuvwx1234 hf_abcdefghijklmnopqrstuvwxyzabcdefgh",
     "*** ***"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789 github_pat_11ABCDEFG0123456789_abcdefghij",
     "*** ***"),
    ("AIzaSyA1234567890abcdefghijklmnopqrstu", "***"),
    ("tokens xoxb-123-456-abcdefghij, xoxp-123-456-abcdefghij and xapp-1-A0-123-abcdef",
     "tokens ***, *** and ***"),
    (f"token {DISCORD}.", "token ***."),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl",
     "jwt ***"),
    ("postgresql://bot:hunter2@db/kuuki failed", "postgresql://bot:***@db/kuuki failed"),
    ("amqp://u:p@ss@mq:5672/ refused", "amqp://u:***@mq:5672/ refused"),
    ("GET /x?q=1&api_key=abc123&key=zz&token=t0k&sig=s1g#top",
     "GET /x?q=1&api_key=***&key=***&token=***&sig=***#top"),
    ("password=hunter2 apikey=abc", "password=*** apikey=***"),
    ('{"api_key": "abc123", "password": "hunter2", "name": "x"}',
     '{"api_key": "***", "password": "***", "name": "x"}'),
    ("X-Api-Key: abc123 and client_secret: s3cr3t", "X-Api-Key: *** and client_secret: ***"),
])
def test_every_credential_shape_is_masked_unknown_or_not(text: str, expected: str) -> None:
    assert Secrets().redact(text) == expected


@pytest.mark.parametrize("text", [
    "skip the intro, sk-1 is a size, sk-learn is a library",
    "see C0123ABCD and U024BE7LH, thread 1700000000.123456, team T0123456",
    "Discord ids 1087654321098765432 and <@1087654321098765432>",
    "at 2024-05-01T12:30:00.123456+00:00 in kuuki.platforms.discord.client",
    "http://127.0.0.1:8080/v1 answered HTTP 400: context too long",
    '{"url":"http://127.0.0.1:8080/v1","email":"alice@example.com"}',
    "sort_key=name monkey=banana keyword=x",
    'password authentication failed for user "bob"',
    "Bearer token auth, Basic auth, the bot token is missing",
    "id 123e4567-e89b-12d3-a456-426614174000, file model.v2.weights.npz",
    "空気を読む bot の設定です (token なし)",
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Secrets(["hunter22-long-secret"]).redact(text) == text


def test_short_long_and_cut_secrets() -> None:
    s = Secrets(["pw", "kuuki", "0123456789abcdefXYZ"])
    # Under 8 characters: masked as a whole word only.
    assert s.redact("user kuuki on kuuki_b, db kuukis", shapes=False) == (
        "user *** on kuuki_b, db kuukis")
    assert s.redact("password pw, pwd=1", shapes=False) == "password ***, pwd=1"
    # 16 or more: also its first 12 characters when an error was cut short.
    assert s.redact("key 0123456789abcdefX… (cut)", shapes=False) == "key *** (cut)"
    assert s.redact("x0123456789abcdefXYZx", shapes=False) == "x***x"


def test_redaction_is_idempotent_and_keeps_the_story() -> None:
    s = Secrets([KEY])
    said = (f"HTTP 401: Incorrect API key provided: {KEY}; Authorization: Bearer {KEY}; "
            "url https://u:pw@h/v1?api_key=zz")
    once = s.redact(said)
    assert once == ("HTTP 401: Incorrect API key provided: ***; Authorization: Bearer ***; "
                    "url https://u:***@h/v1?api_key=***")
    assert s.redact(once) == once


def test_a_url_password_is_known_in_each_encoding() -> None:
    SECRETS.restore(())
    remember_url("postgresql://bot:p%40ss-w0rd@db/kuuki")
    basic = base64.b64encode(b"bot:p@ss-w0rd").decode()
    assert redact(f"p@ss-w0rd p%40ss-w0rd {basic}", shapes=False) == "*** *** ***"
    remember_url("not a url at all")  # nothing to remember, no error


def test_the_url_maskers_are_one() -> None:
    for url in ("postgresql://bot:pw@db/kuuki", "postgresql://u:hunter2@db:notaport/kuuki",
                "postgresql://bot:p@ss@host/db", "sqlite:///x.db"):
        assert mask_raw(url) == mask_userinfo(url)
    assert mask_userinfo("postgresql://bot:p@ss@host/db") == "postgresql://bot:***@host/db"


def test_the_log_filter_masks_messages_arguments_and_tracebacks() -> None:
    SECRETS.restore(())
    SECRETS.add(KEY)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RedactingFilter())
    log = logging.getLogger("kuuki.test.secrets")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("sent %s with Authorization: Bearer %s", KEY, "unknownToken123")
        try:
            raise RuntimeError(f"server said {KEY}")
        except RuntimeError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
        log.propagate = True
    text = out.getvalue()
    assert KEY not in text and "unknownToken123" not in text
    assert "sent *** with Authorization: Bearer ***" in text
    assert "RuntimeError: server said ***" in text


def test_the_cli_logs_through_the_filter(tmp_path: Path) -> None:
    script = (
        "import logging\n"
        "from kuuki.cli import main\n"
        "from kuuki.text.secrets import remember\n"
        "main(['version'])\n"
        f"remember({KEY!r})\n"
        f"logging.getLogger('somelib').warning('key %s, Bearer abcdefgh12345', {KEY!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, cwd=tmp_path)
    assert "WARNING somelib: key ***, Bearer ***" in done.stderr
    assert KEY not in done.stderr
