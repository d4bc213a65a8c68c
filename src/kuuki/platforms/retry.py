"""Channels to read back once the store answers again (both platform adapters).

When the store cannot take events in (an outage), an adapter cannot keep them: Slack will
deliver unacknowledged envelopes again, a few times; Discord never will. Either way the
adapter notes the channel here, and `Retrier` keeps trying to catch it up from the
platform's history, with growing pauses, until that succeeds: what was said while the
store was down is then read back and handled, once (the engine dedupes by event id).

Until a channel is read back, its newer events are not taken in either (`owes`; the
adapters refuse them as if the store had): the store's last message then never gets past
what was lost, so a crash before the read-back still finds the loss at the next start
(reading from the store's last message), where the retrier's memory of it is gone.

Reading back starts where the loss started: at the first refusal for a channel, `start_of`
(the engine's `last_taken`) tells the last message of it that was taken in, and the
channel is read from just after that. Not from the store's last message at retry time:
by then live messages said after the outage may be stored, and everything refused before
them would be skipped for good. When this run took nothing of the channel in (its first
message was refused, or the start-up pass was), the adapter also reads it from just
before the first live message refused there (`refused`), and decides what it reads back,
as any catch-up. Before, a channel the store had never seen got a first look only: its
newest messages, recorded as history and never judged, so a mention refused in it went
unanswered (Slack), or was skipped with the rest when more than the newest 50 were said
after it (Discord).

The store can also fail in the middle of handling what it took in (`left`, told by the
engine): an event stays in the inbox, or the caught-up marker leaves its owed answers
undecided. Nothing was lost then, so the channel keeps taking events in; it gets a round
all the same, which queues the inbox again (`reopen`) and ends in a caught-up marker, once
the store answers, in this run: not at the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from kuuki.domain import ChatEvent, EventKind

log = logging.getLogger("kuuki.platforms")

FIRST_PAUSE_S = 1.0
MAX_PAUSE_S = 30.0


def start_point(
    channel_id: str,
    last: str | None,
    pending: Sequence[ChatEvent],
    *,
    just_before: Callable[[str], str | None],
    order: Callable[[str], Any],
) -> str | None:
    """Where reading ``channel_id`` back after a restart or a takeover starts, in either
    platform's ids: after ``last`` (its last message stored), or from just before its
    oldest message still in the inbox (``pending``) when that is earlier, or when nothing
    is stored (None: the adapter's first look, the newest messages only). A pending
    message may have been answered while its records failed (an outage, then a crash);
    the answer sits after it, before later stored messages. And a channel whose every
    message taken in is still pending (handling lagged behind the intake when the store
    went down) lost what came after them: a first look skipped what lies between.
    ``just_before(id)`` is the platform's id just before a message (None if it has none),
    ``order`` sorts ids as the platform does; an id either cannot read is passed over."""
    for event in pending:
        msg = event.message
        if event.channel.id != channel_id or event.kind is not EventKind.POSTED or msg is None:
            continue
        with contextlib.suppress(ValueError):
            before = just_before(msg.id)
            if before is not None and (last is None or order(before) < order(last)):
                last = before
    return last


class Retrier:
    """Calls ``catch_up(channel_ids, starts, refused)`` for the channels noted as missed
    until it succeeds; ``starts`` maps a channel to the message to read after (channels
    whose start is not known are left out: the adapter reads those from the store's last
    message), ``refused`` to the first live message of it refused (`refused`): when the
    start is not a message, the adapter reads from just before that one too. ``reopen``
    (awaited before each round) takes the channels' events in again and queues what the
    store took in of them while it refused (`Engine.reopen`)."""

    def __init__(
        self,
        catch_up: Callable[
            [Sequence[str], Mapping[str, str | None], Mapping[str, str]], Awaitable[object]
        ],
        *,
        name: str,
        start_of: Callable[[str], str | None] | None = None,
        reopen: Callable[[Sequence[str]], Awaitable[object]] | None = None,
    ) -> None:
        self.catch_up = catch_up
        self.name = name
        self.start_of = start_of
        self.reopen = reopen
        self._missed: set[str] = set()
        self._starts: dict[str, str | None] = {}
        self._first_refused: dict[str, str] = {}  # channel → its first live message refused
        self._owed: set[str] = set()  # missed and not yet read back successfully
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0
        self.pause = FIRST_PAUSE_S  # the wait before the latest round (it grows, see _run)

    def missed(
        self, channel_ids: Iterable[str], *, starts: Mapping[str, str | None] | None = None
    ) -> None:
        """These channels lost events to the store: read them back when it answers.
        ``starts`` gives where to read from when this run has taken nothing in there yet
        (a start-up catch-up the store refused: the store's last messages before it)."""
        for c in channel_ids:
            if not c:
                continue
            self._missed.add(c)
            self._owed.add(c)
            if c in self._starts:
                continue  # the first loss decides
            start = self.start_of(c) if self.start_of is not None else None
            if start is not None:
                self._starts[c] = start
            elif starts is not None and c in starts:
                self._starts[c] = starts[c]
        self._start()

    def left(self, channel_id: str) -> None:
        """The store failed while this channel's work was handled (kuuki.engine.core
        `_left`): a round reopens it and reads it back once the store answers (module
        doc). Its live events are still taken in: it `owes` nothing."""
        self._missed.add(channel_id)
        self._start()

    def _start(self) -> None:
        if self._missed and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"kuuki-{self.name}-catch-up"
            )

    def refused(self, event: ChatEvent, *, owed: bool = False) -> None:
        """A live event the store refused (``owed``: the adapter refused it, its channel
        still to be read back): its channel is `missed`, and a posted message is noted as
        where reading back starts at the latest. ``owed`` notes only: the channel's round
        is already due, and a busy channel must not keep the rounds going."""
        msg = event.message
        if event.kind is EventKind.POSTED and msg is not None and not event.backfill:
            self._first_refused.setdefault(event.channel.id, msg.id)
        if not owed:
            self.missed([event.channel.id])

    def owes(self, channel_id: str) -> bool:
        """True while this channel's lost events are still to be read back."""
        return channel_id in self._owed

    @property
    def pending(self) -> frozenset[str]:
        return frozenset(self._missed)

    async def _run(self) -> None:
        pause = FIRST_PAUSE_S
        while self._missed:
            self.pause = pause  # the wait before this round (tests read it)
            await asyncio.sleep(pause)
            todo = sorted(self._missed)
            self._missed.clear()
            self.rounds += 1
            starts = {c: self._starts[c] for c in todo if c in self._starts}
            firsts = {c: self._first_refused[c] for c in todo if c in self._first_refused}
            try:
                if self.reopen is not None:  # the read-back's own events; live ones wait
                    await self.reopen(todo)  # on `owes`
                await self.catch_up(todo, starts, firsts)
            except Exception as exc:
                self._missed.update(todo)
                pause = min(pause * 2, MAX_PAUSE_S)
                log.warning("%s: catching up %d channels failed (%s); again in %.0fs",
                            self.name, len(todo), exc, pause)
            else:
                for c in todo:
                    if self._first_refused.get(c) != firsts.get(c):
                        self._missed.add(c)  # its first refusal came during the round
                    elif c not in self._missed:  # not refused again meanwhile
                        self._starts.pop(c, None)
                        self._first_refused.pop(c, None)
                        self._owed.discard(c)
                log.info("%s: caught up %d channels after an outage", self.name, len(todo))
                # A channel due again at once (its work failed once more while the store
                # answers reads: one event the store keeps refusing) waits longer each
                # time, so it cannot read the platform's history every second for ever.
                again = any(c in self._missed for c in todo)
                pause = min(pause * 2, MAX_PAUSE_S) if again else FIRST_PAUSE_S

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
