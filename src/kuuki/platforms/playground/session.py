"""One playground session: the engine, its room, its clock, and what the page is told.

`Playground` is the composition root of the page: it builds the kuuki App on a
`ClockDriver`-moved VirtualClock with the `Room` as Outbox, loads the model once (the
page shows "loading the model…" meanwhile), turns every Decision into a card a person can
read, keeps conversation colours and the memory panel fresh, and answers the page's
commands — a clock jump included, which tells the page what it is waiting for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections import deque
from collections.abc import Coroutine
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from kuuki.app.build import FROM_SETTINGS, FromSettings, LLMChoice
from kuuki.clock import VirtualClock
from kuuki.decide.judge.base import Judge
from kuuki.domain import Decision
from kuuki.embed import Embedder
from kuuki.explain.card import decision_card
from kuuki.explain.lines import (
    clock_time,
    duration,
    plural,
    state_lines,
)
from kuuki.platforms.playground.model_status import ModelLoader, ModelStatus
from kuuki.replay.runner import decision_line
from kuuki.settings import Settings

if TYPE_CHECKING:
    from kuuki.app import App
from kuuki.platforms.playground.memory import MemorySnapshot, failed, render
from kuuki.platforms.playground.playback import Player
from kuuki.platforms.playground.room import Hub, Room, RoomError, dumps
from kuuki.platforms.playground.timeline import ClockDriver, timer_driven
from kuuki.platforms.web import jsonable

log = logging.getLogger("kuuki.playground")

DECISIONS_KEPT = 300
MEMORY_POLL_S = 5.0


class Playground:
    """The running engine behind the page. `start` builds it; `close` tears it down."""

    def __init__(
        self,
        settings: Settings,
        *,
        llm: LLMChoice = FROM_SETTINGS,
        judge: Judge | None = None,
        store_url: str | None = None,
        embedder: Embedder | FromSettings | None = FROM_SETTINGS,
        memory: MemorySnapshot | None = None,
        tick_s: float = 0.5,
        start: datetime | None = None,
    ) -> None:
        self.settings = settings
        self._llm = llm
        self._judge = judge
        self._store_url = store_url
        self._embedder = embedder
        self._memory = memory
        self.clock = VirtualClock(start or datetime.now(UTC))
        self.hub = Hub()
        self.room = Room(settings.persona, self.clock, self.hub)
        self.driver = ClockDriver(self.clock, tick_s=tick_s)
        self.app: App | None = None
        self.player: Player | None = None
        self.loader: ModelLoader | None = None
        self.jumping: dict[str, Any] | None = None
        self.decisions: deque[dict[str, Any]] = deque(maxlen=DECISIONS_KEPT)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._memory_sent: dict[str, str] = {}
        self._memory_due: set[str] = set()
        self._last_poll = 0.0
        self._seq = 0

    # -- life ---------------------------------------------------------------------------------

    async def start(self, *, load_model: bool = True) -> None:
        """Build the engine; with ``load_model``, start loading a local model too.

        `serve_playground` loads the model only after it has printed the page's address:
        llama-cpp-python's quiet model load points the process's stdout and stderr at
        /dev/null while it runs, so a line printed meanwhile is lost.
        """
        if self.app is not None:
            return
        store_url = self._store_url
        if store_url is None:  # a fresh room each time, never the real bot's database
            self._tmp = tempfile.TemporaryDirectory(prefix="kuuki-playground-")
            store_url = f"sqlite:///{self._tmp.name}/playground.sqlite3"
        # The page is its own composition root (it rebuilds the app when settings change),
        # so it imports the builder here, not at module level: kuuki.app never imports it.
        from kuuki.app import build_app

        llm = self._llm
        self.app = await build_app(
            self.settings,
            clock=self.clock,
            outbox=self.room,
            llm=llm,
            judge_llm=llm,
            store=store_url,
            dump=self.room.dump_prompt,
            embedder=self._embedder,
            judge=self._judge,
        )
        engine = self.app.engine
        engine.on_decision(self._on_decision)
        if self._memory is None and self.app.memory is not None:
            self._memory = self.app.memory.snapshot
        self.loader = ModelLoader(self.app)
        self.loader.on_change(self._on_model)
        if load_model:
            self.load_model()
        self.player = Player(self.room, self.driver, engine.handle, engine.idle)
        self.driver.on_move(self._on_move)
        self.driver.start()

    def load_model(self) -> None:
        """Load the local model in the background; the page hears 'loading', then 'ready'."""
        assert self.loader is not None, "start() first"
        self.spawn(self.loader.load())

    def _on_model(self, status: ModelStatus) -> None:
        self.hub.publish({"type": "model", **status.to_dict()})

    async def close(self) -> None:
        if self.loader is not None:
            await self.loader.close()
        await self.driver.stop()
        if self.player is not None:
            await self.player.stop()
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.app is not None:
            await self.app.close()
            self.app = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("playground task failed", exc_info=task.exception())
            self.hub.publish({"type": "error", "error": f"internal error: {task.exception()}"})

    @property
    def engine_app(self) -> App:
        if self.app is None:
            raise RuntimeError("the playground is not started")
        return self.app

    # -- what the page sees ---------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        s = self.settings
        app = self.app
        return {
            "type": "state",
            "persona": {
                "name": s.persona.name,
                "aliases": list(s.persona.aliases),
                "language": s.persona.default_language,
            },
            "llm": app.llm.name if app and app.llm else None,
            "model": self.loader.status.to_dict() if self.loader else None,
            "judge": app.engine.pipeline.describe() if app else None,
            "participants": self.room.participants,
            "channels": self.room.channel_list(),
            "messages": list(self.room.messages.values()),
            "decisions": list(self.decisions),
            "typing": sorted(self.room.typing_now),
            "clock": self.driver.status(),
            "playback": self.player.status() if self.player else None,
            "jump": self.jumping,
        }

    async def _on_decision(self, d: Decision) -> None:
        self._seq += 1
        view = self.room.messages.get(d.message_id)
        keys = [f"{d.channel_id}-{d.message_id}-{c.purpose}" for c in d.trace.llm_calls]
        for key, call in zip(keys, d.trace.llm_calls, strict=True):
            self.room.claim_prompt(key, call.purpose)
        payload = {
            "type": "decision",
            "seq": self._seq,
            **decision_line(d),
            # Timers run on the channel's queue: the pass says whether a timer started it.
            "timer": d.trace.features.get("pass") in ("settled", "recheck", "proactive")
            or timer_driven(),
            "message_user": view["user"] if view else None,
            "message_text": view["text"] if view else None,
            "card": self._card(d),
            "trace": d.trace.to_dict(),
            "prompts": keys,
        }
        payload = jsonable(payload)
        self.decisions.append(payload)
        if view is not None:
            view["decision"] = {"action": payload["action"], "seq": self._seq}
        self.hub.publish(payload)
        self._refresh_conversations(d.channel_id)
        self.want_memory(d.channel_id)

    def _card(self, d: Decision) -> dict[str, Any]:
        """The decision as the page shows it (kuuki.explain.card), with the channel as the
        engine holds it right after."""
        state = self.engine_app.engine.state(d.channel_id)
        persona = self.settings.persona
        return decision_card(
            d, (persona.name, *persona.aliases),
            state=state_lines(state, self.clock.now()) if state is not None else (),
        )

    def _refresh_conversations(self, channel_id: str) -> None:
        state = self.engine_app.engine.state(channel_id)
        if state is None or state.tracker is None:
            return
        changed: dict[str, str | None] = {}
        views = [v for v in self.room.messages.values() if v["channel"] == channel_id]
        for view in views[-200:]:
            try:
                cid = state.tracker.conversation_of(view["id"])
            except Exception:
                cid = None
            cid = None if cid is None else str(cid)
            if cid != view["conversation"]:
                view["conversation"] = cid
                changed[view["id"]] = cid
        if changed:
            self.hub.publish({"type": "conversations", "channel": channel_id, "map": changed})

    # -- memory panel -----------------------------------------------------------------------------

    def want_memory(self, channel_id: str) -> None:
        if channel_id in self._memory_due:
            return
        self._memory_due.add(channel_id)
        self.spawn(self._memory_soon(channel_id))

    async def _memory_soon(self, channel_id: str) -> None:
        await asyncio.sleep(0)  # let a burst of decisions coalesce into one read
        self._memory_due.discard(channel_id)
        await self.push_memory(channel_id)

    async def push_memory(self, channel_id: str, *, force: bool = False) -> None:
        if self._memory is None:
            view = failed(channel_id, RuntimeError("this playground has no memory layer"))
        else:
            try:
                view = render(await self._memory(channel_id),
                              bot_name=self.settings.persona.name)
            except Exception as exc:  # the panel shows the error; the room goes on
                log.exception("memory snapshot of %s failed", channel_id)
                view = failed(channel_id, exc)
        # "read at" changes with the clock: compare what the memory says, not when.
        text = dumps({k: v for k, v in view.items() if k != "read_at"})
        if not force and self._memory_sent.get(channel_id) == text:
            return
        self._memory_sent[channel_id] = text
        self.hub.publish({"type": "memory", "channel": channel_id, "memory": jsonable(view)})

    async def _on_move(self) -> None:
        self.hub.publish({"type": "clock", **self.driver.status()})
        loop_now = asyncio.get_running_loop().time()
        if loop_now - self._last_poll >= MEMORY_POLL_S:
            self._last_poll = loop_now
            for channel_id in self.room.channels:
                self.want_memory(channel_id)

    # -- commands from the page -------------------------------------------------------------------

    async def say(self, user: str, channel: str, text: str, reply_to: str | None) -> None:
        event = self.room.record(self.room.compose(user, channel, text, reply_to))
        await self.engine_app.engine.handle(event)

    def begin_jump(self, seconds: float) -> None:
        """Start moving the clock ahead; RoomError while another jump is still running."""
        if self.jumping is not None:
            raise RoomError(f"the clock is still jumping {self.jumping['label']}; "
                            "wait for it to finish")
        start = self.clock.now()
        target = start + timedelta(seconds=seconds)
        self.jumping = {"active": True, "seconds": seconds, "label": f"+{duration(seconds)}",
                        "to": target.isoformat(), "now": start.isoformat(),
                        "waiting": self._waiting_for(target)}
        self.hub.publish({"type": "jump", **self.jumping})
        self.spawn(self.jump(seconds, target))

    async def jump(self, seconds: float, target: datetime | None = None) -> None:
        start = self.clock.now()
        target = target or start + timedelta(seconds=seconds)
        watcher = asyncio.get_running_loop().create_task(self._watch_jump(start, target))
        try:
            await self.driver.advance(seconds)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            label = self.jumping["label"] if self.jumping else f"+{duration(seconds)}"
            self.jumping = None
            self.hub.publish({"type": "jump", "active": False, "seconds": seconds,
                              "label": label, "to": target.isoformat(), "waiting": []})
        self._last_poll = 0.0
        for channel_id in self.room.channels:
            self.want_memory(channel_id)

    async def _watch_jump(self, start: datetime, target: datetime) -> None:
        """While a jump runs, tell the page what it waits for whenever that changes."""
        while True:
            await asyncio.sleep(self.driver.tick_s)
            if self.jumping is None:
                return
            waiting = self._waiting_for(target, start)
            now = self.clock.now().isoformat()
            if waiting != self.jumping["waiting"] or now != self.jumping["now"]:
                self.jumping.update(waiting=waiting, now=now)
                self.hub.publish({"type": "jump", **self.jumping})

    def _waiting_for(self, target: datetime, start: datetime | None = None) -> list[str]:
        """What a jump is busy with: replies being written, model calls, timers.

        The clock stands at each due timer until the work it started is done (a judgment,
        a reply): that is all the page can be told when no reply is being written.
        """
        out = [f"{self.settings.persona.name} writing a reply in #{ch}"
               for ch in sorted(self.room.typing_now)]
        app = self.app
        queued = sum(m.waiting for m in app.models) if app is not None else 0
        if queued:
            out.append(f"{plural(queued, 'model call')} queued")
        now = self.clock.now()
        if not out and start is not None and start < now < target:
            out.append(f"the work of a timer due at {clock_time(now)}")
        due = self.clock.next_due()
        if due is not None and due <= target:
            out.append(f"next timer at {clock_time(due)}")
        return out

