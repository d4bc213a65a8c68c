"""A bot in its own OS process, for crash tests: ``python -m kuuki.testing.bot_process``.

A crash test must kill the bot for real (SIGKILL: no ``finally``, no flush, no goodbye), so
the bot cannot live in the test's own process. This runs the product path unchanged — a
kuuki App, its store, and the real discord.py or slack-bolt client — pointed at a local
protocol server (`DiscordServer`, `SlackServer`) by URL, with a deterministic LLM:

* `tagged_llm` (a `ScriptedLLM` whose default is worked out from the call) answers a
  free-text request with ``Noted #tag.``, where ``#tag`` is the last ``#…`` word of the
  request's last turn (the message being answered), and every structured request with
  its schema's most passive value. A test gives each addressed
  message its own tag and so can count the replies each one got.
* With ``--accepted FILE`` every event the engine accepted (its `Engine.submit` result is
  in: stored, or known before) is appended to FILE, one id a line, written straight to the
  kernel (``os.write``), so a SIGKILL loses none already written. The record follows
  acceptance, never precedes it: what FILE lists was accepted.
* ``ready`` is printed on stdout once the client is connected and has caught up (Discord:
  the start-up catch-up round is over; Slack: the history is read and the socket open).
* SIGTERM stops the bot the ordinary way (the App closes: queued work finished, the
  store flushed); SIGKILL is the crash.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from kuuki.app import App, build_app
from kuuki.clock import RealClock
from kuuki.domain import ChatEvent
from kuuki.llm.stub import passive_value
from kuuki.settings import load_settings
from kuuki.testing.llm import Scripted, ScriptedCall, ScriptedLLM

_TAG = re.compile(r"#[A-Za-z0-9_-]+")


def tagged_llm() -> ScriptedLLM:
    """See module doc: ``Noted #tag.`` for text, the passive object for JSON."""
    return ScriptedLLM(name="tagged", default=_noted)


def _noted(call: ScriptedCall) -> Scripted:
    if call.tools is not None:
        return ""  # a tool round answers no text; the reply comes on the retry without tools
    if call.json_schema is not None:
        passive: Scripted = passive_value(call.json_schema)
        return passive
    tags = _TAG.findall(call.messages[-1].content) if call.messages else []
    return f"Noted {tags[-1]}." if tags else "Noted."


class _AcceptedLog:
    def __init__(self, path: str | None) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if path else None

    def watch(self, event_id: str, result: Awaitable[bool]) -> Awaitable[bool]:
        if self._fd is None or not isinstance(result, asyncio.Future):
            return result
        fd = self._fd

        def done(f: asyncio.Future[bool]) -> None:
            if not f.cancelled() and f.exception() is None:
                os.write(fd, f"{event_id}\n".encode())

        result.add_done_callback(done)
        return result


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m kuuki.testing.bot_process")
    p.add_argument("platform", choices=("discord", "slack"))
    p.add_argument("--api", required=True, help="the local server's API base URL")
    p.add_argument("--store", required=True, help="store URL (sqlite:///… or postgresql://…)")
    p.add_argument("--token", default="kuuki-test-token", help="bot token")
    p.add_argument("--app-token", default="xapp-kuuki-test", help="Slack app-level token")
    p.add_argument("--accepted", help="append every accepted event id to this file")
    p.add_argument("--backfill-limit", type=int, default=200, help="Slack history per channel")
    return p


async def _serve(args: argparse.Namespace) -> None:
    settings = load_settings()  # env (KUUKI_*) and kuuki.toml, as `kuuki run` reads them
    settings = replace(settings, store_url=args.store)
    llm = tagged_llm()
    accepted = _AcceptedLog(args.accepted)
    if args.platform == "discord":
        await _discord(args, settings, llm, accepted)
    else:
        await _slack(args, settings, llm, accepted)


def _watch_submit(app: App, accepted: _AcceptedLog) -> None:
    engine = app.engine
    submit = engine.submit

    def recorded(event: ChatEvent) -> Awaitable[bool]:
        return accepted.watch(event.event_id, submit(event))

    engine.submit = recorded  # type: ignore[method-assign]


async def _discord(args: argparse.Namespace, settings: Any, llm: ScriptedLLM,
                   accepted: _AcceptedLog) -> None:
    from discord.http import Route

    from kuuki.platforms.discord import DiscordOutbox, KuukiClient, run_discord

    Route.BASE = args.api
    outbox = DiscordOutbox()
    app = await build_app(settings, clock=RealClock(), outbox=outbox, llm=llm, judge_llm=llm,
                          embedder=None)
    _watch_submit(app, accepted)
    task = asyncio.create_task(run_discord(app, args.token, outbox, guild_ready_timeout=0.05))
    try:
        while outbox.client is None and not task.done():
            await asyncio.sleep(0.01)
        if isinstance(outbox.client, KuukiClient):
            ready = asyncio.ensure_future(outbox.client.caught_up.wait())
            await asyncio.wait({ready, task}, return_when=asyncio.FIRST_COMPLETED)
            if ready.done():
                print("ready", flush=True)
        await task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await app.close()


async def _slack(args: argparse.Namespace, settings: Any, llm: ScriptedLLM,
                 accepted: _AcceptedLog) -> None:
    from kuuki.platforms.slack import SlackOutbox
    from kuuki.platforms.slack.adapter import SlackAdapter

    outbox = SlackOutbox()
    app = await build_app(settings, clock=RealClock(), outbox=outbox, llm=llm, judge_llm=llm,
                          embedder=None)
    _watch_submit(app, accepted)
    adapter = SlackAdapter(app, args.token, args.app_token, outbox, base_url=args.api,
                           backfill_limit=args.backfill_limit)
    try:
        await adapter.start()
        print("ready", flush=True)
        await asyncio.Event().wait()
    finally:
        await adapter.close()
        await app.close()


def _dump_tasks() -> None:
    for task in asyncio.all_tasks():
        print(f"--- {task.get_name()}", file=sys.stderr)
        task.print_stack(file=sys.stderr)
    sys.stderr.flush()


def run_process(serve: Callable[[], Awaitable[int | None]]) -> int:
    """Run ``serve()`` as a test process's whole life: SIGTERM stops it the ordinary way
    (cancelled, so it closes cleanly), SIGUSR1 prints what every task waits on."""

    async def run() -> int:
        me = asyncio.current_task()
        assert me is not None
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, me.cancel)
        loop.add_signal_handler(signal.SIGUSR1, _dump_tasks)  # what a stuck process waits on
        with contextlib.suppress(asyncio.CancelledError):
            return await serve() or 0
        return 0

    return asyncio.run(run())


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    run_process(lambda: _serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
