"""`kuuki bench secrets`: the number of places each configured secret was found.

The bot runs in the playground (the real engine, the real `OpenAICompatLLM`s, the real
HTTP tools) against careless servers that echo every credential they are sent
(kuuki.testing.echo_llm): in 400, 401, 404, 422, 429 and 500 bodies, in an error event
mid-way through a server-sent event stream, in a tool's answer and a tool's 403, and, for
the platform tokens, in a failed send. Then every place kuuki writes text is read: every
log record of every logger (DEBUG, before any handler's redaction), every row of every
table of the store, `kuuki why` (text and JSON) for every message, the playground's
decision cards and everything it pushed to the page (prompts included), and `/kuuki why`.
The figure is the occurrences of each secret in each place; it should be 0 everywhere,
while the servers did receive and echo the secrets and the errors still say what happened
(the HTTP status, ``***`` where the key was). A second part goes through a proxy with a
password in its URL, on a SQLite store of its own.
"""

from __future__ import annotations

import io
import json
import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import create_async_engine

from kuuki.domain import Action, Channel, Message, User
from kuuki.explain.why import run_why
from kuuki.platforms.commands import run_command
from kuuki.platforms.playground.session import Playground
from kuuki.settings import Settings, load_settings
from kuuki.store import normalise_url
from kuuki.testing.echo_llm import EchoingLLMServer, EchoingService

SECRETS = {
    "llm api key": "sk-probeMainKey0123456789abcdefXYZ",
    "judge api key": "sk-probeJudgeKey9876543210zyxwvuABC",
    "llm base_url password": "proxyPass-4e5f6a7b8c",
    "tool header token": "toolTok-5d4c3b2a1908f7e6",
    "discord token": "MTA4NzY1NDMyMTA5ODc2NTQzMjE.GkUuKi.probe-discord-token-0123456789",
    "slack bot token": "xoxb-1234567890-0987654321-probeBotTokenValue",
    "slack app token": "xapp-1-A0123456789-1234567890123-probeappvalue0123456789",
    "slack signing secret": "8f2c1b0e9d7a6c5b4a3f2e1d0c9b8a7f",
    "broker password": "brokerPw-71c2d9e8",
}

# (user, channel, text, seconds to let pass afterwards): each "[f…]" tells the echoing
# server how to answer the calls about that message (kuuki.testing.echo_llm).
TALK = [
    ("alice", "general", "Kuu, can you look the status up? [ftool]", 90),
    ("bob", "general", "Kuu, and the admin page? [ftool403]", 90),
    ("alice", "general", "Kuu, are you there? [f400t]", 90),
    ("bob", "general", "Kuu, hello again [f401]", 90),
    ("alice", "general", "Kuu, which model are you? [f404]", 90),
    ("bob", "general", "Kuu, what about this one? [f422]", 90),
    ("alice", "general", "Kuu, still busy? [f429]", 90),
    ("bob", "general", "Kuu, one more time [f500]", 90),
    ("alice", "general", "Kuu, streaming now? [fsse]", 90),
    # Ambient: the judge model (its own key) decides whether to speak.
    ("carol", "random", "does anyone know why the nightly build broke? [f422]", 90),
    ("dave", "random", "is the deploy script still failing for anyone? [f401]", 90),
    ("erin", "random", "anyone around who knows the VPN settings? [fsse]", 90),
    # The platform refuses the send and quotes the tokens it was given.
    ("alice", "ops", "Kuu, can you hear me in here?", 90),
]
# Through a proxy with a password in its URL (HTTP Basic, no key sent).
PROXIED = [
    ("alice", "general", "Kuu, through the proxy? [f422]", 90),
    ("bob", "general", "Kuu, the proxy again [fsse]", 90),
]


def _settings(tmp_path: Path, llm_url: str, service: str, store_url: str) -> Settings:
    config = tmp_path / "kuuki.toml"
    config.write_text(_config(llm_url, service, store_url))
    return load_settings(env={"PROBE_TOOL_TOKEN": SECRETS["tool header token"]}, path=config)


def _config(llm_url: str, service: str, store_url: str) -> str:
    """kuuki.toml with every secret kuuki holds set (the tool's through the environment)."""
    return f"""
[persona]
name = "Kuu"
language = "en"

[llm]
backend = "openai"
base_url = "{llm_url}"
model = "echo"
api_key = "{SECRETS['llm api key']}"
max_retries = 0
timeout_s = 10
reply_budget_s = 600

[judge_llm]
backend = "openai"
base_url = "{llm_url}"
model = "echo-judge"
api_key = "{SECRETS['judge api key']}"

[judge]
mode = "hybrid"

[tuning]
JUDGE_LLM_THRESHOLD_LOW = 0
JUDGE_LLM_THRESHOLD_HIGH = 100

[tools]
enabled = []

[[tools.http]]
name = "lookup"
description = "The service's status"
url = "{service}/lookup"
params = {{ q = "what to look up" }}
headers = {{ Authorization = "Bearer ${{PROBE_TOOL_TOKEN}}" }}

[[tools.http]]
name = "denied"
description = "The admin page"
url = "{service}/denied"
params = {{ q = "what to look up" }}
headers = {{ X-Api-Key = "${{PROBE_TOOL_TOKEN}}" }}

[store]
url = "{store_url}"

[broker]
url = "amqp://kuuki:{SECRETS['broker password']}@127.0.0.1:5672/"

[discord]
token = "{SECRETS['discord token']}"

[slack]
bot_token = "{SECRETS['slack bot token']}"
app_token = "{SECRETS['slack app token']}"
signing_secret = "{SECRETS['slack signing secret']}"
"""


def _proxied(s: Settings, llm_url: str) -> Settings:
    proxy = llm_url.replace("http://", f"http://proxy:{SECRETS['llm base_url password']}@")
    return replace(s, llm=replace(s.llm, base_url=proxy), judge_llm=None)


class _PlatformRefuses(Exception):
    pass


def _refusing_send(real: Any) -> Any:
    """The room's send, except in #ops, where the "platform" refuses and quotes tokens."""

    async def send(channel: Channel, action: Action) -> Message | None:
        if channel.id == "ops":
            raise _PlatformRefuses(
                f"401 Unauthorized: Authorization: Bot {SECRETS['discord token']}; "
                f"The server responded with: {{'ok': False, 'error': 'invalid_auth', "
                f"'token': '{SECRETS['slack bot token']}', 'app': "
                f"'{SECRETS['slack app token']}', 'signed': '{SECRETS['slack signing secret']}'}}"
            )
        result: Message | None = await real(channel, action)
        return result

    return send


async def _run(pg: Playground, talk: list[tuple[str, str, str, int]],
               seen: list[str]) -> list[str]:
    """Say ``talk`` in the playground; what it showed goes to ``seen``; the ids of the
    messages it decided about come back."""
    queue = pg.hub.subscribe()
    await pg.start(load_model=False)
    pg.room.add_channel("ops", "public", announce=False)
    pg.room.send = _refusing_send(pg.room.send)  # type: ignore[method-assign]
    try:
        for user, channel, said, wait in talk:
            await pg.say(user, channel, said, None)
            await pg.engine_app.engine.idle()
            await pg.jump(wait)
            await pg.engine_app.engine.idle()
        for channel in ("general", "random", "ops"):
            reply = await run_command(pg.engine_app.engine, pg.room.channel(channel),
                                      User("alice", "alice"), "why")
            seen.append(reply.text)
        seen += [json.dumps(d, ensure_ascii=False, default=str) for d in pg.decisions]
        decided = sorted({str(d["after"]) for d in pg.decisions})
        seen += list(pg.room.prompts.values())
        seen.append(json.dumps(pg.snapshot(), ensure_ascii=False, default=str))
    finally:
        await pg.close()
    while not queue.empty():
        seen.append(queue.get_nowait())
    return decided


async def _rows(store_url: str) -> list[str]:
    """Every row of every table, as text."""
    engine = create_async_engine(normalise_url(store_url))
    out: list[str] = []
    try:
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda c: inspect(c).get_table_names())
            for name in names:
                for row in await conn.execute(text(f'SELECT * FROM "{name}"')):
                    out.append(f"{name}: " + " | ".join(
                        v.decode(errors="replace") if isinstance(v, bytes) else str(v)
                        for v in row))
    finally:
        await engine.dispose()
    return out


async def _why(s: Settings, store_url: str, message_ids: list[str]) -> list[str]:
    out = []
    for mid in message_ids:
        for as_json in (False, True):
            buffer = io.StringIO()
            await run_why(s, mid, None, as_json, buffer, store_url)
            out.append(buffer.getvalue())
    return out


def _log_texts(records: list[logging.LogRecord]) -> list[str]:
    formatter = logging.Formatter()
    return [formatter.format(r) + (r.exc_text or "") for r in records]


def _count(places: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    return {name: {place: sum(t.count(secret) for t in texts)
                   for place, texts in places.items()}
            for name, secret in SECRETS.items()}


PLACES = ("logs", "store rows", "kuuki why", "playground and /kuuki why")
# What the errors must still say, found somewhere among the places.
UNDERSTOOD = ("HTTP 422", "HTTP 400", "refused the API key (HTTP 401)",
              "does not know model 'echo' (HTTP 404)", "rejected tools",
              "the service answered HTTP 403", "send failed: _PlatformRefuses: 401",
              "Incorrect API key provided: ***", "http://proxy:***@127.0.0.1")
FAULTS = frozenset({"tool", "tool403", "400t", "401", "404", "422", "429", "500", "sse"})


@dataclass
class SecretProbe:
    """What one probe found. `counts`: secret → place → occurrences (every place listed).
    `read`: place → texts read there. `auths`, `faults`, `asked` and `everything` are the
    raw evidence (they hold the secrets, so `as_json` leaves them out)."""

    store: str
    counts: dict[str, dict[str, int]]
    read: dict[str, int]
    auths: set[str] = field(repr=False)
    faults: set[str]
    asked: int
    everything: str = field(repr=False)

    def echoes(self) -> dict[str, bool]:
        """The servers really got the secrets and answered every fault (the probe can fail)."""
        return {
            "LLM server got the LLM API key": f"Bearer {SECRETS['llm api key']}" in self.auths,
            "LLM server got the judge API key":
                f"Bearer {SECRETS['judge api key']}" in self.auths,
            "LLM server got the proxy's user:password":
                any(a.startswith("Basic ") for a in self.auths),
            "every fault was answered": self.faults >= FAULTS,
            "the tool service was called twice or more": self.asked >= 2,
        }

    def understood(self) -> dict[str, bool]:
        return {said: said in self.everything for said in UNDERSTOOD}

    def failures(self) -> list[str]:
        """Each secret found somewhere, each check that did not hold; none is a pass."""
        return ([f"{name} found in {place} ({n}x)" for name, places in self.counts.items()
                 for place, n in places.items() if n]
                + [f"not so: {c}" for c, ok in self.echoes().items() if not ok]
                + [f"no longer said: {s!r}" for s, ok in self.understood().items() if not ok])

    def as_json(self) -> dict[str, Any]:
        return {"benchmark": "secrets", "store": self.store, "read": self.read,
                "counts": self.counts, "total": sum(sum(p.values()) for p in self.counts.values()),
                "echoes": self.echoes(), "understood": self.understood(),
                "failures": self.failures()}


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _every_record() -> Iterator[list[logging.LogRecord]]:
    """Every log record at DEBUG, as emitted: the root's own handlers (the CLI's redacting
    one) are set aside meanwhile, so they neither redact first nor print the DEBUG flood."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    capture = _Records()
    root.handlers = [capture]
    root.setLevel(logging.DEBUG)  # setLevel, not .level: it clears the loggers' caches
    try:
        yield capture.records
    finally:
        root.handlers = handlers
        root.setLevel(level)


async def probe(store_url: str | None = None) -> SecretProbe:
    """Run the probe on ``store_url`` (an empty store; default a temporary SQLite file)."""
    with tempfile.TemporaryDirectory(prefix="kuuki-secrets-") as tmp:
        work = Path(tmp)
        store_url = store_url or f"sqlite:///{work / 'kuuki.db'}"
        proxy_store = f"sqlite:///{work / 'proxied.db'}"
        shown: list[str] = []
        with _every_record() as records:
            async with EchoingLLMServer() as llm, EchoingService() as service:
                s = _settings(work, llm.base_url, service.base_url, store_url)
                ids = await _run(Playground(s, store_url=store_url, embedder=None,
                                            tick_s=3600), TALK, shown)
                proxied = await _run(Playground(_proxied(s, llm.base_url),
                                                store_url=proxy_store, embedder=None,
                                                tick_s=3600), PROXIED, shown)
                sent = llm.requests
            rows = await _rows(store_url) + await _rows(proxy_store)
            why = await _why(s, store_url, ids) + await _why(s, proxy_store, proxied)
        places = {"logs": _log_texts(records), "store rows": rows, "kuuki why": why,
                  "playground and /kuuki why": shown}
        return SecretProbe(
            store=store_url.split(":", 1)[0].split("+", 1)[0], counts=_count(places),
            read={place: len(texts) for place, texts in places.items()},
            auths={r.headers.get("Authorization", "") for r in sent},
            faults={r.fault for r in sent}, asked=len(service.asked),
            everything="\n".join(t for texts in places.values() for t in texts))


def print_report(found: SecretProbe, out: TextIO, *, as_json: bool = False) -> int:
    """The table (or one JSON object); 1 when a secret was found or the probe did not
    hold (a server never got or echoed a secret, an error lost its meaning), else 0."""
    if as_json:
        print(json.dumps(found.as_json(), ensure_ascii=False), file=out)
        return 1 if found.failures() else 0
    width = max(len(n) for n in SECRETS)
    print(f"{'secret':<{width}}  " + "  ".join(PLACES) + "  total", file=out)
    for name, places in found.counts.items():
        cells = "  ".join(f"{places[p]:>{len(p)}}" for p in PLACES)
        print(f"{name:<{width}}  {cells}  {sum(places.values()):>5}", file=out)
    totals = "  ".join(f"{sum(c[p] for c in found.counts.values()):>{len(p)}}"
                       for p in PLACES)
    print(f"{'total':<{width}}  {totals}  {found.as_json()['total']:>5}", file=out)
    print(f"store: {found.store}; the servers got and echoed every secret: "
          f"{all(found.echoes().values())}; the errors still say what happened: "
          f"{all(found.understood().values())}", file=out)
    for line in found.failures():
        print(f"FAIL: {line}", file=out)
    return 1 if found.failures() else 0
