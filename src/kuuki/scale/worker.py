"""`kuuki worker`: the engine for the channels whose partitions this process holds.

Each partition queue has one active consumer (RabbitMQ's single-active-consumer); a worker
registers on all of them, first on its own share (``index`` of ``count``: partitions p
with p % count == index) and, ``standby_s`` later, on the rest as a standby, so while all
live each owns its share and when one dies the others take its queues over.

A delivery goes, in delivery order, to `Engine.submit`: the store's inbox takes it in
(its primary key drops an event id taken in before, whichever worker took it) and the
channel's queue handles it. The broker message is acknowledged only when the writer has
committed the transaction that marks the event handled (`BatchedWriter.committed`): an
event held for a settling burst stays unacknowledged until its turn comes. So a worker
that dies leaves exactly the unfinished work unacknowledged, and RabbitMQ gives it, in
order and flagged ``redelivered``, to the queue's next consumer.

Taking a channel over: the first redelivered message of a channel this worker has not
handled starts a takeover, and the channel's messages wait behind it. The store's pending
events of the channel are queued as catch-up (`Engine.recover`), then the platform's
history after the last stored message is read back (REST), which finds an answer the dead
worker sent but never recorded, then the catch-up marker answers what is still owed. The
timers the dead worker held come back with their events (debounce: the event is pending)
or from the store's decisions (re-check: `Engine.recover_timers`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol

from kuuki.app import App
from kuuki.domain import Channel, ChatEvent, EventKind
from kuuki.scale.broker import BadEnvelope, Envelope, connect, declare, decode
from kuuki.text.secrets import redact

log = logging.getLogger("kuuki.scale")

PREFETCH = 256  # unacknowledged messages per partition queue
STANDBY_S = 2.0
_KNOWN = 100_000  # channels remembered as handled here (a redelivery of one is not a takeover)


class ChannelReader(Protocol):
    """A platform's REST side in a worker: reads a taken-over channel back (catch-up
    events, then the channel's caught-up marker)."""

    async def read_back(self, channel: Channel, pending: Sequence[ChatEvent]) -> int: ...


class WorkerStopped(Exception):
    """The worker cannot go on (the store refused events, the broker went away); what it
    had not acknowledged goes to another worker."""


class BrokerWorker:
    """Feeds broker deliveries to an App's engine and acknowledges them (module doc)."""

    def __init__(
        self,
        app: App,
        readers: Mapping[str, ChannelReader] | None = None,
        *,
        saw: Callable[[ChatEvent], None] | None = None,
    ) -> None:
        if app.store is None or app.writer is None:
            raise ValueError("a worker needs the shared store")
        self.app = app
        self.engine = app.engine
        self.readers = dict(readers or {})
        self.saw = saw  # the outboxes learn what came last in a channel (reply or plain)
        self._unacked: dict[str, list[Any]] = {}
        self._recovering: set[str] = set()
        self._held: dict[str, list[tuple[Any, Envelope]]] = {}
        self._last_submit: dict[str, asyncio.Future[bool]] = {}  # per channel, until done
        self._known: OrderedDict[str, None] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.stopped: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.consumers: list[tuple[Any, str]] = []  # (queue, consumer tag)
        self.delivered = 0
        self.acked = 0
        self.takeovers = 0
        app.writer.committed.append(self._committed)

    # -- deliveries, in order ---------------------------------------------------------------

    async def on_delivery(self, message: Any) -> None:
        """aio-pika's consumer callback: each runs as its own task, started in delivery
        order; everything that fixes the order happens before the first await."""
        self.deliver(message)

    def deliver(self, message: Any) -> None:
        self.delivered += 1
        try:
            envelope = decode(message.body)
        except BadEnvelope as exc:
            log.error("dropped a broker message: %s", exc)
            self._ack(message)
            return
        cid = envelope.channel.id
        if cid in self._held:  # the channel is being taken over: wait behind it
            self._held[cid].append((message, envelope))
            return
        if message.redelivered and cid not in self._known:
            self._held[cid] = [(message, envelope)]
            self._spawn(self._take_over(envelope.channel))
            return
        self._take(message, envelope)

    def _take(self, message: Any, envelope: Envelope) -> None:
        cid = envelope.channel.id
        self._known[cid] = None
        self._known.move_to_end(cid)
        if len(self._known) > _KNOWN:
            self._known.popitem(last=False)
        event = envelope.event
        if event is None:  # a gateway's catch-up marker
            self._marker(envelope.channel, message)
            return
        self._unacked.setdefault(event.event_id, []).append(message)
        if self.saw is not None and event.kind is EventKind.POSTED:
            self.saw(event)
        result = asyncio.ensure_future(self.engine.submit(event))
        result.add_done_callback(lambda f: self._submitted(event.event_id, message, f))
        self._last_submit[cid] = result
        result.add_done_callback(lambda f: self._forget_submit(cid, f))

    def _marker(self, channel: Channel, message: Any) -> None:
        """The catch-up marker goes on the channel's queue after the events delivered
        before it, which may still be waiting for the inbox's commit (in the engine's
        line, but not yet on the channel's queue)."""
        before = self._last_submit.get(channel.id)

        def mark(_: Any = None) -> None:
            self.engine.caught_up(channel)
            self._ack(message)

        if before is None or before.done():
            mark()
        else:
            before.add_done_callback(mark)

    def _forget_submit(self, cid: str, result: asyncio.Future[bool]) -> None:
        if self._last_submit.get(cid) is result:
            del self._last_submit[cid]

    def _submitted(self, event_id: str, message: Any, result: asyncio.Future[bool]) -> None:
        if result.cancelled():
            return
        if (exc := result.exception()) is not None:
            self._stop(WorkerStopped(f"the store refused event {event_id}: "
                                     f"{redact(str(exc))}"))
            return
        if result.result():
            return  # new: acknowledged when its handling is committed
        # Taken in before: handled already, unless a takeover queued it again or its first
        # delivery is still being handled here (both are acknowledged at that commit).
        waiting = self._unacked.get(event_id, [])
        if not any(m is message for m in waiting):
            # Acknowledged already: the commit of its handling (a takeover's recovered
            # event) came between this delivery's take and its admission's answer. A
            # second ack of one delivery tag closes the broker channel: the worker stops.
            return
        if event_id in self._recovering or len(waiting) > 1:
            return
        self._unacked.pop(event_id, None)
        self._ack(message)

    def _committed(self, event_ids: list[str]) -> None:
        for event_id in event_ids:
            self._recovering.discard(event_id)
            for message in self._unacked.pop(event_id, ()):
                self._ack(message)

    # -- taking a channel over --------------------------------------------------------------

    async def _take_over(self, channel: Channel) -> None:
        self.takeovers += 1
        try:
            assert self.app.store is not None
            pending = await self.app.store.inbox.pending_events(channel_id=channel.id)
            self._recovering.update(e.event_id for e in pending)
            await self.engine.recover(channel_id=channel.id)
            await self.engine.recover_timers(channel)
            reader = self.readers.get(channel.platform)
            if reader is not None:
                await reader.read_back(channel, pending)
            # The reader marks the channel caught up after what it read, unless the read
            # failed; a second marker finds nothing more owed, a missing one strands the
            # recovered events, so there is always one.
            self.engine.caught_up(channel)
            log.info("took channel %s over (%d events pending)", channel.id, len(pending))
        except Exception as exc:
            if isinstance(exc, ConnectionError | OSError) or "refus" in str(exc):
                self._stop(WorkerStopped(f"could not take channel {channel.id} over: "
                                         f"{redact(str(exc))}"))
                return
            log.warning("reading channel %s back failed (%s); answering what the store "
                        "knows", channel.id, exc)
            self.engine.caught_up(channel)
        finally:
            for message, envelope in self._held.pop(channel.id, []):
                self._take(message, envelope)

    async def drain(self) -> None:
        """Stop taking deliveries, finish what was taken, commit it and acknowledge it
        (a clean stop: nothing is handed to another worker that was handled here). A
        takeover still running hands its held deliveries to the engine when it ends:
        those are finished too."""
        for queue, tag in self.consumers:
            try:
                await queue.cancel(tag)
            except Exception as exc:
                log.debug("cancelling a consumer: %s", exc)
        self.consumers.clear()
        assert self.app.writer is not None
        while True:
            await self.engine.idle()
            await self.app.writer.flush()  # the acknowledgements of what it committed
            if not self._tasks:
                return
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- plumbing -----------------------------------------------------------------------------

    def _ack(self, message: Any) -> None:
        self.acked += 1
        self._spawn(message.ack())

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.debug("broker call failed: %s", exc)

    def _stop(self, why: BaseException) -> None:
        if not self.stopped.done():
            log.error("worker stopping: %s", why)
            self.stopped.set_exception(why)


async def consume(
    worker: BrokerWorker,
    url: str,
    partitions: int,
    *,
    index: int = 0,
    count: int = 1,
    prefetch: int = PREFETCH,
    standby_s: float = STANDBY_S,
) -> Any:
    """Connect, register ``worker`` on the partition queues (its share first), and return
    the connection; a lost connection stops the worker."""
    connection = await connect(url, robust=False)
    connection.close_callbacks.add(
        lambda *_: worker._stop(WorkerStopped("the broker connection closed"))
    )
    channel = await connection.channel()
    await channel.set_qos(prefetch_count=prefetch)
    _, queues = await declare(channel, partitions)
    mine = [q for p, q in enumerate(queues) if p % count == index]
    rest = [q for p, q in enumerate(queues) if p % count != index]
    for queue in mine:
        worker.consumers.append((queue, await queue.consume(worker.on_delivery)))

    async def standby() -> None:
        await asyncio.sleep(standby_s)  # real time: the others' own shares come first
        for queue in rest:
            worker.consumers.append((queue, await queue.consume(worker.on_delivery)))

    if rest:
        worker._spawn(standby())
    return connection
