"""The service checks of `kuuki doctor`: the store (it connects, its migrations are this
kuuki's), the broker when one is set, the model (the configured back-end, built by the
factory `kuuki run` uses, answers a tiny prompt) and, when no model is configured, the model
servers running on this machine. Nothing is written: a store is only read."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import aiohttp

from kuuki.app.build import make_llm
from kuuki.cli.doctor.report import Endpoints, Result, failed, note, passed
from kuuki.clock import RealClock
from kuuki.errors import KuukiError, LLMError, StoreError
from kuuki.llm.base import ChatMessage
from kuuki.settings import LLMSettings, Settings
from kuuki.store import MIGRATIONS, display_url, normalise_url
from kuuki.store.reading import Found, Kind, look, not_kuukis
from kuuki.text.secrets import redact


async def check_store(settings: Settings) -> Result:
    try:
        url = normalise_url(settings.store_url or None)
    except KuukiError as exc:
        return failed("store", str(exc))
    shown = display_url(url)
    try:
        found = await look(url)  # read-only: doctor never creates, migrates or changes
    except StoreError as exc:
        return failed("store", str(exc),
                      "is the database running and reachable? check KUUKI_STORE_URL "
                      "(store.url)")
    return _verdict(shown, found)


def _verdict(shown: str, found: Found) -> Result:
    known = [m.version for m in MIGRATIONS]
    if found.kind is Kind.MISSING:
        return passed("store", f"{shown}: a new SQLite file, created on the first run")
    if found.kind is Kind.EMPTY:
        return passed("store", f"{shown}: connected, empty: `kuuki run` creates the tables "
                      "on its first start")
    if found.kind is Kind.FOREIGN:
        return failed("store", not_kuukis(found),
                      "point KUUKI_STORE_URL (store.url) at kuuki's own database")
    if found.kind is Kind.NEWER:
        newer = [v for v in found.applied if v not in known]
        return failed("store", f"{shown} was migrated by a newer kuuki (schema versions "
                      f"{', '.join(map(str, newer))} unknown here)", "upgrade kuuki")
    pending = [f"m{m.version:03d}_{m.name}" for m in MIGRATIONS
               if m.version not in found.applied]
    if pending:
        return failed(
            "store", f"{shown}: migrations not current, {len(pending)} of {len(known)} "
            f"pending ({', '.join(pending)})",
            "back the database up, then run `kuuki store migrate` (or start `kuuki run` "
            "once: it applies them on start)")
    return passed("store", f"{shown}: connected, schema current (version {known[-1]})")


async def check_broker(settings: Settings) -> Result | None:
    if not settings.broker_url:
        return None
    from kuuki.scale.broker import connect

    try:
        conn = await connect(settings.broker_url, robust=False)
    except KuukiError as exc:
        return failed("broker", str(exc), "is RabbitMQ running there, and are the user, "
                      "password and virtual host in KUUKI_BROKER_URL right?")
    await conn.close()
    return passed("broker", "connected")


def _label(s: LLMSettings) -> str:
    if s.backend == "embedded":
        return f"embedded ({s.model_path or 'the shipped SmolLM2'})"
    if s.backend == "openai":
        return f"openai {s.model} at {s.base_url or 'https://api.openai.com/v1'}"
    return s.backend


async def check_model(name: str, s: LLMSettings) -> Result:
    if s.backend == "none":
        return passed(name, "off (backend none): no generation, judging by rules only")
    label = _label(s)
    llm: Any = None
    clock = RealClock()
    try:
        llm = make_llm(replace(s, max_retries=0))
        assert llm is not None
        start = clock.monotonic()
        done = await llm.complete([ChatMessage("user", "Say OK.")], max_tokens=4,
                                  temperature=0.0)
        ms = (clock.monotonic() - start) * 1000
    except (LLMError, KuukiError) as exc:
        fix = ("start the server, or correct base_url and model in kuuki.toml [llm] "
               "(KUUKI_LLM_BASE_URL, KUUKI_LLM_MODEL)" if s.backend == "openai" else
               "check llm.model_path (KUUKI_LLM_MODEL_PATH) and `kuuki -v doctor`")
        why = redact(str(exc)).removeprefix(f"{s.base_url}: ")
        return failed(name, f"{label} did not answer: {why}", fix)
    finally:
        if llm is not None and hasattr(llm, "aclose"):
            await llm.aclose()
    return passed(name, f"{label} answered in {ms:.0f} ms ({done.model})")


async def _models_at(http: aiohttp.ClientSession, port: int) -> list[str] | None:
    try:
        async with http.get(f"http://127.0.0.1:{port}/v1/models") as resp:
            if resp.status != 200:
                return None
            body = await resp.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]


async def probe_local(ep: Endpoints) -> Result:
    """The OpenAI-compatible model servers on this machine's usual ports, and the lines of
    kuuki.toml that would use the first one found."""
    timeout = aiohttp.ClientTimeout(total=ep.probe_timeout_s)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        found = await asyncio.gather(*(_models_at(http, p) for p, _ in ep.local_servers))
    servers = [(p, label, models) for (p, label), models in zip(ep.local_servers, found,
                                                                 strict=True)
               if models is not None]
    if not servers:
        ports = ", ".join(f"{p} ({label})" for p, label in ep.local_servers)
        return note("local model server", f"none on 127.0.0.1 ports {ports}; the shipped "
                    "SmolLM2 is in use (tiny: fine to try kuuki, not for a community)")
    more = [f"{label} on 127.0.0.1:{p}: {', '.join(models) or 'no models loaded'}"
            for p, label, models in servers]
    port, _, models = next(((p, lb, m) for p, lb, m in servers if m), servers[0])
    more += ["to use it, in kuuki.toml:", "[llm]", 'backend = "openai"',
             f'base_url = "http://127.0.0.1:{port}/v1"',
             f'model = "{models[0] if models else "…"}"']
    return note("local model server", f"{len(servers)} found", *more)
