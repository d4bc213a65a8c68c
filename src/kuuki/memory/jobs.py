"""Background work of the memory layer: tracked tasks and a log of what each job did.

Memory jobs (summaries, reflection, proactive talk, maintenance) never run on the message
path: the hook spawns them here. `idle` waits for all of them (tests, the virtual clock's
settle, shutdown); a failing job is logged and recorded, never raised into the engine.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from kuuki.domain import DecisionTrace
from kuuki.llm.base import Completion

log = logging.getLogger("kuuki.memory")


class ModelCalls(Protocol):
    """What the memory layer sees of the model's queue (kuuki.llm.scheduler.ScheduledLLM)."""

    changed: asyncio.Event

    def background_tasks(self) -> frozenset[asyncio.Task[Any]]: ...


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One finished memory job: what, where, whether it changed memory, and why not."""

    job: str
    channel_id: str
    at: datetime
    ok: bool
    reason: str = ""
    trace: DecisionTrace | None = field(default=None, compare=False)
    # Nothing to do yet (too few messages, nothing to bring up): not a failure to report.
    skipped: bool = False


class Jobs:
    """A set of background tasks, plus the last few hundred job outcomes."""

    def __init__(self, history: int = 500) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self.records: deque[JobRecord] = deque(maxlen=history)
        self._closed = False

    def spawn(self, name: str, fn: Callable[[], Awaitable[Any]]) -> None:
        if self._closed:
            return

        async def run() -> None:
            try:
                await fn()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("memory job %s failed", name)

        task = asyncio.get_running_loop().create_task(run(), name=f"kuuki-memory-{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def record(self, rec: JobRecord) -> None:
        self.records.append(rec)
        interrupted = rec.trace is not None and any(
            c.outcome == "interrupted" for c in rec.trace.llm_calls)
        if rec.ok or rec.skipped or interrupted:  # stopped for a reply or at shutdown: by design
            log.debug("memory %s in %s: %s", rec.job, rec.channel_id, rec.reason or "ok")
        else:
            log.warning("memory %s in %s left memory unchanged: %s", rec.job, rec.channel_id,
                        rec.reason)

    def of(self, job: str) -> list[JobRecord]:
        return [r for r in self.records if r.job == job]

    async def idle(self) -> None:
        # Jobs may spawn jobs (a summary schedules the workspace memory): loop until quiet.
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def settled(self, model: ModelCalls | None) -> None:
        """Wait until every job is done or inside a memory call of ``model``.

        What the virtual clock waits for after a timer: work a timer started, but not a
        model writing a summary (a clock jump, a replay's next line, must not wait for
        that). A job whose model call never suspends (the scripted test model) is simply
        waited for, so tests stay deterministic.
        """
        while True:
            parked = model.background_tasks() if model is not None else frozenset()
            active = {t for t in self._tasks if not t.done() and t not in parked}
            if not active:
                return
            waits: set[asyncio.Future[Any]] = set(active)
            changed: asyncio.Task[Any] | None = None
            if model is not None:
                changed = asyncio.ensure_future(model.changed.wait())
                waits.add(changed)
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if changed is not None and not changed.done():
                changed.cancel()

    async def close(self) -> None:
        await self.idle()
        self._closed = True

    def cancel(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()


def trace_for(job: str, channel_id: str, now: datetime) -> DecisionTrace:
    """A trace for a background job, so its LLM calls are recorded like a decision's."""
    return DecisionTrace(message_id=f"memory:{job}", channel_id=channel_id, started_at=now)


def completion_text(completion: Completion | None, n: int = 300) -> str:
    """What the model wrote, shortened, for the guard's record in a job's trace."""
    text = completion.text.strip() if completion is not None else ""
    return text if len(text) <= n else text[: n - 1] + "…"


def failure_reason(trace: DecisionTrace, fallback: str) -> str:
    for call in reversed(trace.llm_calls):
        if call.outcome != "ok":
            return f"{call.purpose}: {call.outcome}: {call.detail}"[:300]
    return fallback
