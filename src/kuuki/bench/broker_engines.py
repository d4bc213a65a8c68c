"""The two engines `kuuki bench broker` measures (kuuki.bench.broker): topology, publish,
and the consumer loop that runs in its own process.

RabbitMQ: a consistent-hash exchange routes a channel id to one of 8 quorum queues declared
with x-single-active-consumer; every consumer registers on its queues and the broker keeps one
active per queue, failing over to a waiting one and redelivering the unacked messages.
Quorum rather than classic queues: classic queues with SAC could crash and not fail over in
3.10/3.11 (rabbitmq-server#5460), and quorum queues are the replicated, durable type.

NATS JetStream 2.9: one stream, the server's `partition(8, channel)` subject mapping, one
durable pull consumer per partition. JetStream does not say who owns a partition, so a consumer
first takes a lease key per partition in a KV bucket whose TTL expires it when its holder dies.

aio-pika (the `scale` extra) and nats-py (a test extra only) are imported inside the functions
that use them, so the bench's other cases run without them.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from kuuki.bench.broker_wire import (
    NATS_ACK_WAIT_S,
    NATS_LEASE_S,
    PARTITIONS,
    PREFETCH,
    BrokerEngine,
    event,
    partition,
)
from kuuki.text.secrets import mask_userinfo as masked
from kuuki.text.secrets import redact

WINDOW = 256  # publishes awaiting their confirm at once


def _problem(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}").replace("\n", " ")[:200]


async def _quiet(exc: Exception) -> None:
    """nats-py logs each failed attempt with a traceback; the bench reports the failure."""


def _record(ledger: TextIO, body: bytes, redelivered: bool) -> None:
    """The worker's "stored it" step: one flushed line, before the ack goes out."""
    ev = json.loads(body)
    ledger.write(f"{ev['channel']} {ev['seq']} {int(redelivered)} {time.time():.6f}\n")
    ledger.flush()


# --- RabbitMQ -------------------------------------------------------------------------------


def _rabbit_names(run: str) -> tuple[str, list[str]]:
    return f"kuuki.bench.{run}", [f"kuuki.bench.{run}.p{k}" for k in range(PARTITIONS)]


async def rabbit_engine(url: str, run: str, queue_type: str = "quorum") -> BrokerEngine | str:
    import aio_pika

    exchange_name, queue_names = _rabbit_names(run)
    try:
        conn = await aio_pika.connect(url, timeout=5)
    except Exception as exc:
        return f"cannot connect to {masked(url)} ({_problem(exc)}); start it with .ci/rabbitmq.sh"
    try:
        probe = await conn.channel()
        await probe.declare_exchange(exchange_name, "x-consistent-hash", durable=True)
    except Exception as exc:
        await conn.close()
        return (f"{masked(url)} has no consistent-hash exchange ({_problem(exc)}); "
                "rabbitmq-plugins enable rabbitmq_consistent_hash_exchange")

    async def setup() -> None:
        ch = await conn.channel()
        exchange = await ch.declare_exchange(exchange_name, "x-consistent-hash", durable=True)
        for name in queue_names:
            queue = await ch.declare_queue(name, durable=True, arguments={
                "x-queue-type": queue_type, "x-single-active-consumer": True})
            await queue.bind(exchange, routing_key="1")  # the binding key is the ring weight

    async def publish(todo: list[tuple[str, int]]) -> None:
        ch = await conn.channel(publisher_confirms=True)
        exchange = await ch.get_exchange(exchange_name, ensure=False)
        pending: set[asyncio.Future[Any]] = set()
        for channel, seq in todo:
            message = aio_pika.Message(event(run, channel, seq), content_type="application/json",
                                       delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
            pending.add(asyncio.ensure_future(exchange.publish(message, routing_key=channel)))
            if len(pending) >= WINDOW:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for fut in done:
                    fut.result()  # a nack or a closed channel stops the bench
        await asyncio.gather(*pending)
        await ch.close()

    def spec(parts: list[int], role: str) -> dict[str, Any]:
        return {"engine": "rabbitmq", "url": url, "run": run, "parts": parts, "role": role}

    async def teardown() -> None:
        ch = await conn.channel()
        for name in queue_names:
            await ch.queue_delete(name, if_unused=False, if_empty=False)
        await ch.exchange_delete(exchange_name)
        await conn.close()

    name = "rabbitmq" if queue_type == "quorum" else f"rabbitmq-{queue_type}"
    return BrokerEngine(name, setup, publish, spec, teardown,
                  f"consistent-hash exchange, {PARTITIONS} {queue_type} queues with SAC")


Go = Callable[[], Awaitable[None]]


async def _consume_rabbit(spec: dict[str, Any], ledger: TextIO, stop: asyncio.Event,
                          go: Go) -> None:
    import aio_pika

    _, queue_names = _rabbit_names(spec["run"])
    conn = await aio_pika.connect(spec["url"])
    ch = await conn.channel()
    await ch.set_qos(prefetch_count=PREFETCH)

    async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        # aiormq runs each delivery as a task, in arrival order; this line is written before
        # the first await, so the ledger keeps the delivery order.
        _record(ledger, message.body, bool(message.redelivered))
        await message.ack()

    await go()
    for k in spec["parts"]:
        queue = await ch.get_queue(queue_names[k], ensure=False)
        await queue.consume(on_message)
    print("consuming", flush=True)
    await stop.wait()
    await conn.close()


# --- NATS JetStream -------------------------------------------------------------------------


def _nats_names(run: str) -> tuple[str, str]:
    return f"KB{run}", f"KBL{run}"


async def nats_engine(url: str, run: str) -> BrokerEngine | str:
    import nats
    from nats.js import api as nats_api
    from nats.js.errors import NoStreamResponseError

    stream, bucket = _nats_names(run)
    try:
        nc = await nats.connect(url, connect_timeout=3, allow_reconnect=False,
                                max_reconnect_attempts=1, error_cb=_quiet)
    except Exception as exc:
        return f"cannot connect to {masked(url)} ({_problem(exc)}); start it with .ci/nats.sh"
    js = nc.jetstream(publish_async_max_pending=WINDOW)
    try:
        await js.account_info()
    except Exception as exc:
        await nc.close()
        return f"{masked(url)} has no JetStream ({_problem(exc)}); start it with .ci/nats.sh"
    mapped = True

    async def setup() -> None:
        nonlocal mapped
        await js.add_stream(name=stream, subjects=[f"kuuki.bench.{run}.part.>"],
                            storage=nats_api.StorageType.FILE)
        try:  # does the server map ev.<channel> onto part.<n>.<channel>?
            await js.publish(f"kuuki.bench.{run}.ev.probe", b"{}")
        except NoStreamResponseError:
            mapped = False
        await js.purge_stream(stream)
        for k in range(PARTITIONS):
            await js.add_consumer(stream, nats_api.ConsumerConfig(
                durable_name=f"p{k}", filter_subject=f"kuuki.bench.{run}.part.{k}.>",
                ack_policy=nats_api.AckPolicy.EXPLICIT, ack_wait=NATS_ACK_WAIT_S,
                max_ack_pending=PREFETCH))
        await js.create_key_value(nats_api.KeyValueConfig(bucket=bucket, ttl=NATS_LEASE_S))
        engine.note = ("server partition mapping" if mapped else
                       "client-side partitions: the server has no mapping (.ci/nats.sh has it)")
        engine.note += f"; KV lease {NATS_LEASE_S:g} s, ack wait {NATS_ACK_WAIT_S:g} s"

    async def publish(todo: list[tuple[str, int]]) -> None:
        futures = []
        for channel, seq in todo:
            subject = (f"kuuki.bench.{run}.ev.{channel}" if mapped else
                       f"kuuki.bench.{run}.part.{partition(channel)}.{channel}")
            futures.append(await js.publish_async(subject, event(run, channel, seq)))
        await asyncio.gather(*futures)

    def spec(parts: list[int], role: str) -> dict[str, Any]:
        return {"engine": "nats", "url": url, "run": run, "parts": parts, "role": role}

    async def teardown() -> None:
        await js.delete_stream(stream)
        await js.delete_key_value(bucket)
        await nc.close()

    engine = BrokerEngine("nats", setup, publish, spec, teardown)
    return engine


async def _consume_nats(spec: dict[str, Any], ledger: TextIO, stop: asyncio.Event,
                        go: Go) -> None:
    import nats
    from nats.js.errors import KeyWrongLastSequenceError

    stream, bucket = _nats_names(spec["run"])
    nc = await nats.connect(spec["url"], allow_reconnect=False)
    js = nc.jetstream()
    kv = await js.key_value(bucket)
    me = str(os.getpid()).encode()
    held: list[str] = []

    async def keep_leases() -> None:
        while True:
            await asyncio.sleep(NATS_LEASE_S / 4)
            for key in held:
                await kv.put(key, me)

    async def take(key: str) -> None:
        if spec["role"] == "active":
            await kv.put(key, me)
            return
        while True:  # a standby: the key is free once its holder stopped renewing it
            try:
                await kv.create(key, me)
                return
            except (KeyWrongLastSequenceError, TimeoutError):
                await asyncio.sleep(0.05)

    async def drain(k: int) -> None:
        if f"p{k}" not in held:
            await take(f"p{k}")
            held.append(f"p{k}")
        sub = await js.pull_subscribe_bind(durable=f"p{k}", stream=stream)
        while True:
            try:
                messages = await sub.fetch(PREFETCH, timeout=1)
            except TimeoutError:  # nats.errors.TimeoutError is one too: no message yet
                continue
            for message in messages:
                _record(ledger, message.data, message.metadata.num_delivered > 1)
                await message.ack()

    await go()
    if spec["role"] == "active":  # hold the leases before going on: a standby comes next
        for k in spec["parts"]:
            await take(f"p{k}")
            held.append(f"p{k}")
    tasks = [asyncio.create_task(keep_leases())]
    tasks += [asyncio.create_task(drain(k)) for k in spec["parts"]]
    print("consuming", flush=True)
    await stop.wait()
    for task in tasks:
        task.cancel()
    for result in await asyncio.gather(*tasks, return_exceptions=True):
        if not isinstance(result, asyncio.CancelledError):  # a loop that died: say so
            print(f"nats consumer: {result!r}", file=sys.stderr)
    await nc.close()


async def consume_forever(spec: dict[str, Any]) -> None:
    """A consumer process: connects, says "ready", waits for "go" on stdin (so that several
    start consuming at once, or one strictly after another), says "consuming", and handles
    until SIGTERM (then stops cleanly) or SIGKILL."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)

    async def go() -> None:
        print("ready", flush=True)
        if (await loop.run_in_executor(None, sys.stdin.readline)).strip() != "go":
            raise SystemExit(0)  # the bench went away

    consume = _consume_rabbit if spec["engine"] == "rabbitmq" else _consume_nats
    with open(spec["ledger"], "a", encoding="utf-8") as ledger:
        await consume(spec, ledger, stop, go)
