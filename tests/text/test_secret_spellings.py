"""A secret in any spelling never shows (issue 33), through the one redaction step:
each configured secret in each spelling kuuki can meet, each credential shape kuuki was
not told about, and database URLs whose password holds ``@``, ``/`` or ``'``. The same
table runs through the real paths in tests/e2e/test_secret_spellings_e2e.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx2
import openai
import pytest

from kuuki.llm.openai_wire import status_message
from kuuki.replay.cli import run_replay
from kuuki.settings import Settings
from kuuki.settings.urls import display_url, mask_raw, normalise_url
from kuuki.testing.secret_spellings import CONFIGURED, UNCONFIGURED, leaks, spelled_probes
from kuuki.text.secrets import SECRETS, Secrets, redact, remember_url, split_userinfo

# Around the secret: an error body that breaks its line with an escaped newline first.
BEFORE, AFTER = '{"error": {"message": "the upstream refused:\\n', '\\tretry later"}}'


@pytest.mark.parametrize(("name", "way", "spelled"), spelled_probes())
def test_a_configured_secret_is_masked_in_every_spelling(name: str, way: str,
                                                         spelled: str) -> None:
    secret = CONFIGURED[name]
    said = BEFORE + spelled + AFTER
    assert leaks(said, secret, spelled)  # the probe holds the secret
    out = Secrets([secret]).redact(said, shapes=False)
    assert leaks(out, secret, spelled) == [], out
    assert out == BEFORE + "***" + AFTER  # masked exactly, the rest as it was


@pytest.mark.parametrize(("what", "said", "parts"), UNCONFIGURED,
                         ids=[u[0] for u in UNCONFIGURED])
def test_a_credential_shape_is_masked_unconfigured(what: str, said: str,
                                                   parts: tuple[str, ...]) -> None:
    assert all(part in said for part in parts)
    out = Secrets().redact(said)
    assert [part for part in parts if part in out] == [], out
    assert "***" in out


@pytest.mark.parametrize("text", [
    "max_tokens=256 tokens=12 total_tokens: 40",
    "the bot token: invalid_auth (Slack)",
    "PASS: test_login, auth: required, oauth=1",
    "bypass=1 sort_key=name, press any key: the build goes on",
    '{"usage": {"prompt_tokens": 10, "completion_tokens": 4}, "token_type": "bearer"}',
    "see https://mastodon.example:8443/@alice and https://host:8080/v1/@scope/pkg",
    "C:\\new\\table and a \\n in the middle of nowhere",
])
def test_ordinary_text_stays(text: str) -> None:
    assert Secrets(["hunter22-long-secret"]).redact(text) == text


def test_masking_keeps_the_text_around_and_is_idempotent() -> None:
    s = Secrets(CONFIGURED.values())
    said = "".join(f"[{spelled}] " for _, _, spelled in spelled_probes())
    once = s.redact(said)
    assert once == "[***] " * len(spelled_probes())
    assert s.redact(once) == once


@pytest.mark.parametrize(("url", "password", "shown"), [
    ("postgresql+asyncpg://kuuki:pw@3rS3cret@127.0.0.1:1/kuuki", "pw@3rS3cret",
     "postgresql+asyncpg://kuuki:***@127.0.0.1:1/kuuki"),
    ("postgresql://bot:db-pass/w%rd@db.example:5432/kuuki", "db-pass/w%rd",
     "postgresql+asyncpg://bot:***@db.example:5432/kuuki"),
    ("postgresql://bot:it's-S3cret@db.example/kuuki", "it's-S3cret",
     "postgresql+asyncpg://bot:***@db.example/kuuki"),
    ("postgresql://bot:p%40ss%2Fw0rd@db.example/kuuki", "p@ss/w0rd",
     "postgresql+asyncpg://bot:***@db.example/kuuki"),
])
def test_a_database_url_password_ends_at_the_last_at_sign(url: str, password: str,
                                                          shown: str) -> None:
    SECRETS.restore(())
    parsed = normalise_url(url)
    assert parsed.password == password and parsed.host in ("127.0.0.1", "db.example")
    assert display_url(parsed) == shown
    assert mask_raw(url).endswith(shown.split("***", 1)[1])
    # Reading the URL registered its password: an error quoting it in any spelling is clean.
    assert redact(f"auth failed for <{password}> ({password.replace('/', '%2F')})",
                  shapes=False) == "auth failed for <***> (***)"


def test_split_userinfo() -> None:
    assert split_userinfo("amqp://u:p@ss@mq:5672/") == ("amqp://", "u", "p@ss", "mq:5672/")
    assert split_userinfo("http://u@h/x") == ("http://", "u", None, "h/x")
    assert split_userinfo("postgresql://u:p@h/db?opt=a@b") == ("postgresql://", "u", "p",
                                                               "h/db?opt=a@b")
    for plain in ("sqlite:////home/me/data@2024/kuuki.db", "http://h/x?to=a@b", "no url"):
        assert split_userinfo(plain) is None


def test_remember_url_registers_a_password_that_holds_at_and_slash() -> None:
    SECRETS.restore(())
    remember_url("postgresql+asyncpg://kuuki:pw@3rS3cret/x@127.0.0.1:1/kuuki")
    assert redact("said pw@3rS3cret/x and pw%403rS3cret%2Fx", shapes=False) == (
        "said *** and ***")


async def test_no_chat_message_is_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Redaction is for foreign text at the edges (an error, a tool's answer, a log record),
    not for the message path: a replay of 300 messages calls it not once."""
    calls: list[str] = []
    real = Secrets.redact

    def counted(self: Secrets, text: str, *, shapes: bool = True) -> str:
        calls.append(text)
        return real(self, text, shapes=shapes)

    monkeypatch.setattr(Secrets, "redact", counted)
    users = ("alice", "bob", "carol")
    lines = [{"id": f"m{i}", "t": i * 20, "channel": "general", "user": users[i % 3],
              "text": f"Kuu, message {i} about the deploy?" if i % 7 == 0
              else f"message {i}: the build is red again, password reset needed"}
             for i in range(300)]
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    out, err = io.StringIO(), io.StringIO()
    assert await run_replay(Settings(), transcript, llm="none", out=out, err=err) == 0
    decided = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(decided) >= 300 and any(d["action"] != "none" for d in decided)
    assert calls == []


@pytest.mark.parametrize(("what", "said", "parts"), UNCONFIGURED,
                         ids=[u[0] for u in UNCONFIGURED])
def test_an_authentication_error_quoting_a_shape_is_clean(what: str, said: str,
                                                          parts: tuple[str, ...]) -> None:
    request = httpx2.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    refused = openai.AuthenticationError(f"Error code: 401 - {said}",
                                         response=httpx2.Response(401, request=request),
                                         body=None)
    shown = status_message(refused)
    assert shown.startswith("HTTP 401: Error code: 401 - ") and "***" in shown
    assert [part for part in parts if part in shown] == [], shown
