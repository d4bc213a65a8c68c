"""A secret in any spelling never shows, through the real paths (issue 33).

The table of kuuki.testing.secret_spellings runs through `kuuki replay` with the real
engine and the real `OpenAICompatLLM` (the openai client) against a local server that
answers each probe's message as the probe says: an HTTP 409 whose error message holds the
secret so spelled, or a tool call whose tool (a plugin, registered as plugins are) returns
the secret or fails quoting it. The settings hold
every configured secret where an operator would put it (the API key, a Slack token, the
broker's and the LLM proxy's passwords, a judge key, a tool header). Then every place is
read: each log record at DEBUG before any handler redacts it (but aiosqlite's, which repeat
the rows written: the rows themselves are read), the replay's output, every row of the
store, and `kuuki why` (text and JSON) for the probe's message.

The store URL's password (``@``, ``/``, ``'`` unencoded) is probed through `kuuki doctor`,
`kuuki stats` and `kuuki why` themselves.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import create_async_engine

from kuuki.cli import main
from kuuki.explain.why import run_why
from kuuki.replay.cli import run_replay
from kuuki.respond.tools.base import ToolContext, ToolError
from kuuki.respond.tools.registry import REGISTRY
from kuuki.settings import load_settings
from kuuki.store import normalise_url
from kuuki.testing.echo_llm import EchoingLLMServer
from kuuki.testing.secret_spellings import CONFIGURED, UNCONFIGURED, leaks, spelled_probes
from kuuki.text.secrets import SECRETS, redact


@dataclass(frozen=True)
class Probe:
    """One message of the replay: how its secret comes back, and what must not survive."""

    mid: str
    path: str  # "LLM error" | "tool error" | "tool result"
    what: str
    secret: str  # a configured secret; "" for a shape, whose `parts` must not survive
    spelled: str
    parts: tuple[str, ...] = ()

    def left(self, text: str) -> list[str]:
        """What of the secret is still in ``text``."""
        if self.secret:
            return leaks(text, self.secret, self.spelled)
        return [part for part in self.parts if part in text]


def _probes() -> list[Probe]:
    """Every spelled configured secret through an LLM error, a tool's error and a tool's
    result; every shape through an LLM error and a tool's error (tool results are cleaned
    of known secrets only: an answer's own token-shaped data is the answer). Interleaved,
    so that no three model calls in a row fail (the breaker would pause the model)."""
    configured = [(f"{name}, {way}", CONFIGURED[name], spelled, ())
                  for name, way, spelled in spelled_probes()]
    shapes = [(what, "", said, parts) for what, said, parts in UNCONFIGURED]
    rounds = [[("LLM error", *c), ("tool error", *c), ("tool result", *c)] for c in configured]
    rounds += [[("LLM error", *c), ("tool error", *c)] for c in shapes]
    return [Probe(f"m{i}", *fields) for i, fields in enumerate(f for r in rounds for f in r)]


PROBES = _probes()
AROUND = "the upstream refused it:\n{} (retry later)"


def _config(llm_url: str) -> str:
    """Every configured secret where an operator would put it."""
    proxied = llm_url.replace("http://", f"http://proxy:{CONFIGURED['password with @']}@")
    broker_pw = quote(CONFIGURED["password with / and %"], safe="")
    return f"""
[persona]
name = "Kuu"
language = "en"
[llm]
backend = "openai"
base_url = "{proxied}"
model = "echo"
api_key = "{CONFIGURED['API key']}"
max_retries = 0
[tuning]  # no summaries or reflection: their calls would fail too and pause the model
CHANNEL_CONTEXT_ENABLED = false
REFLECTION_ENABLED = false
PROACTIVE_CONVERSATION_ENABLED = false
[judge_llm]
backend = "openai"
model = "echo-judge"
api_key = "{CONFIGURED['password with ä']}"
[broker]
url = "amqp://kuuki:{broker_pw}@127.0.0.1:5672/"
[slack]
bot_token = "{CONFIGURED['Slack bot token']}"
app_token = "xapp-1-A0123456789-1234567890123-appvalue"
[tools]
enabled = ["lookup"]
[[tools.http]]
name = "declared"
description = "Never called: declared for its header"
url = "http://127.0.0.1:1/x"
headers = {{ X-Api-Key = "{CONFIGURED["password with ' and /"]}" }}
"""


@dataclass
class _Lookup:
    """A plugin tool: returns, or fails quoting, what the probe named by ``q`` says."""

    said: dict[str, tuple[bool, str]]
    name: str = "lookup"
    description: str = "Look something up"
    parameters: dict[str, Any] = field(default_factory=lambda: {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        fails, said = self.said[args["q"]]
        if fails:
            raise ToolError(said)
        return said


@dataclass
class Seen:
    """What the replay wrote, place by place."""

    logs: str
    rows: str
    output: str
    why: dict[str, str]  # message id -> `kuuki why` text + JSON
    asked: set[str]  # the probes the LLM server answered


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _transcript(path: Path) -> None:
    lines = []
    for i, probe in enumerate(PROBES):
        marker = f"fp{i}" if probe.path == "LLM error" else f"fusep{i}"
        lines.append({"id": probe.mid, "t": i * 120, "channel": "general", "user": "alice",
                      "text": f"Kuu, what does it say? [{marker}]", "mentions": ["Kuu"]})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")


def _answers(server: EchoingLLMServer) -> dict[str, tuple[bool, str]]:
    tool: dict[str, tuple[bool, str]] = {}
    for i, probe in enumerate(PROBES):
        said = AROUND.format(probe.spelled)
        if probe.path == "LLM error":
            server.answers[f"p{i}"] = (409, json.dumps({"error": {"message": said}}))
        else:
            tool[f"p{i}"] = (probe.path == "tool error", said)
    return tool


async def _rows(store_url: str) -> list[str]:
    engine = create_async_engine(normalise_url(store_url))
    out: list[str] = []
    try:
        async with engine.connect() as conn:
            for name in await conn.run_sync(lambda c: inspect(c).get_table_names()):
                out += [f"{name}: {row}" for row in await conn.execute(
                    text(f'SELECT * FROM "{name}"'))]
    finally:
        await engine.dispose()
    return out


async def _replay(work: Path, records: _Records) -> Seen:
    async with EchoingLLMServer() as server:
        config = work / "kuuki.toml"
        config.write_text(_config(server.base_url), encoding="utf-8")
        settings = load_settings(env={}, path=config)
        tool = _Lookup(_answers(server))
        _transcript(work / "probes.jsonl")
        out, err = io.StringIO(), io.StringIO()
        with pytest.MonkeyPatch.context() as patch:
            patch.setitem(REGISTRY.factories, "lookup", lambda host: tool)
            code = await run_replay(settings, work / "probes.jsonl", llm="openai",
                                    store=str(work / "store.db"), out=out, err=err)
        assert code == 0, err.getvalue()
        asked = {r.fault for r in server.requests}
    store = f"sqlite:///{work / 'store.db'}"
    why = {}
    for probe in PROBES:
        said = []
        for as_json in (False, True):
            buffer = io.StringIO()
            await run_why(settings, probe.mid, None, as_json, buffer, store)
            said.append(buffer.getvalue())
        why[probe.mid] = "\n".join(said)
    formatter = logging.Formatter()
    logs = "\n".join(formatter.format(r) + (r.exc_text or "") for r in records.records)
    return Seen(logs=logs, rows="\n".join(await _rows(store)),
                output=out.getvalue() + err.getvalue(), why=why, asked=asked)


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seen]:
    """One replay of every probe (the per-probe tests below read what it left)."""
    before = SECRETS.values()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    records = _Records()
    root.handlers = [records]  # every record as emitted, before any redacting handler
    root.setLevel(logging.DEBUG)
    rows_again = logging.getLogger("aiosqlite")
    rows_level = rows_again.level
    rows_again.setLevel(logging.INFO)
    try:
        yield asyncio.run(_replay(tmp_path_factory.mktemp("spellings"), records))
    finally:
        root.handlers = handlers
        root.setLevel(level)
        rows_again.setLevel(rows_level)
        SECRETS.restore(before)


@pytest.mark.parametrize("probe", PROBES, ids=[f"{p.path}: {p.what}" for p in PROBES])
def test_a_spelled_secret_never_shows(seen: Seen, probe: Probe) -> None:
    i = PROBES.index(probe)
    marker = f"p{i}" if probe.path == "LLM error" else f"usep{i}"
    assert marker in seen.asked  # the server answered this probe: the secret came back
    why = seen.why[probe.mid]
    assert probe.left(why) == [], why
    for place, texts in (("logs", seen.logs), ("store rows", seen.rows),
                         ("replay output", seen.output)):
        assert probe.left(texts) == [], place
    # The error still says what happened, "***" where the secret was.
    if probe.path == "LLM error":
        assert "HTTP 409" in why and "the upstream refused it" in why and "***" in why
    else:
        assert f"The service said: {'error: ' if probe.path == 'tool error' else ''}" \
               "the upstream refused it" in why and "***" in why


STORE = "postgresql+asyncpg://kuuki:{}@127.0.0.1:1/kuuki"


@pytest.mark.parametrize("password", ["pw@3rS3cret", "db-pass/w%rd", "it's-S3cret"])
@pytest.mark.parametrize("command", [["stats", "--store"], ["why", "--store"],
                                     ["why", "m1", "--store"], ["doctor"]])
def test_the_store_url_shows_no_part_of_its_password(
    command: list[str], password: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = STORE.format(password)
    SECRETS.restore(())
    if command == ["doctor"]:
        monkeypatch.setenv("KUUKI_STORE_URL", url)
        monkeypatch.setenv("KUUKI_LLM", "none")
        argv = command
    else:
        argv = [*command, url]
    main(argv)
    said = capsys.readouterr()
    shown = said.out + said.err
    assert "postgresql+asyncpg://kuuki:***@127.0.0.1:1/kuuki" in shown, shown
    assert leaks(shown, password) == [] and password.split("@")[-1] not in shown, shown
    # Reading the URL registered its password: a later error quoting it is clean.
    assert redact(f"FATAL: password {password} rejected", shapes=False) == (
        "FATAL: password *** rejected")
