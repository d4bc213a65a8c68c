"""RabbitMQ between gateways and workers: the topology, the envelope, publish and consume.

Topology, declared (idempotently) by every gateway and worker:

    exchange  kuuki.events      x-consistent-hash, durable
    queues    kuuki.events.<p>  p = 0 … P-1, quorum, x-single-active-consumer,
                                each bound with weight "1"

A message's routing key is its channel id, which the exchange hashes onto one queue: a
channel stays on one queue while P is unchanged (changing P moves channels; stop the
gateways and let the queues drain first). A queue gives its messages, in order, to one
consumer at a time; when that consumer's connection goes, RabbitMQ puts what it had not
acknowledged back in order and hands the queue to the next consumer registered on it.

Messages are persistent JSON envelopes (`encode`/`decode`), ``v`` 1:
``{"v": 1, "kind": "event", "event": <event_payload>, "catch_up": bool}`` or
``{"v": 1, "kind": "caught_up", "channel": <channel fields>}``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from kuuki.domain import Channel, ChatEvent
from kuuki.errors import KuukiError
from kuuki.settings.urls import mask_raw
from kuuki.store.records import event_payload, payload_event, visibility
from kuuki.text.secrets import redact, remember_url

log = logging.getLogger("kuuki.scale")

EXCHANGE = "kuuki.events"
VERSION = 1


def queue_name(partition: int) -> str:
    return f"{EXCHANGE}.{partition}"


# -- the envelope ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Envelope:
    """One broker message: an event, or a channel's catch-up marker (``event`` None)."""

    channel: Channel
    event: ChatEvent | None = None

    @property
    def routing_key(self) -> str:
        return self.channel.id


class BadEnvelope(KuukiError):
    """A broker message kuuki cannot read; the text names the field."""


def encode(item: Envelope) -> bytes:
    if item.event is not None:
        body: dict[str, Any] = {
            "v": VERSION, "kind": "event", "event": event_payload(item.event),
            "catch_up": item.event.catch_up,
        }
    else:
        ch = item.channel
        body = {"v": VERSION, "kind": "caught_up", "channel": {  # as in event_payload
            "id": ch.id, "name": ch.name, "visibility": str(ch.visibility),
            "workspace": ch.workspace, "platform": ch.platform, "parent_id": ch.parent_id,
        }}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def decode(raw: bytes) -> Envelope:
    """The envelope in ``raw``; `BadEnvelope` naming what is wrong otherwise."""
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadEnvelope(f"broker message is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadEnvelope("broker message is not a JSON object")
    if body.get("v") != VERSION:
        raise BadEnvelope(f"broker message field 'v': expected {VERSION}, got {body.get('v')!r}")
    kind = body.get("kind")
    try:
        if kind == "event":
            event = payload_event(body["event"])
            if body.get("catch_up"):
                event = replace(event, catch_up=True)
            return Envelope(event.channel, event)
        if kind == "caught_up":
            c = body["channel"]
            return Envelope(Channel(
                str(c["id"]), str(c["name"]), visibility(str(c["visibility"])),
                str(c["workspace"]), str(c["platform"]), c.get("parent_id"),
            ))
    except KeyError as exc:
        raise BadEnvelope(f"broker message of kind {kind!r} lacks field {exc}") from None
    except (TypeError, ValueError) as exc:
        raise BadEnvelope(f"broker message of kind {kind!r} has a bad field: {exc}") from None
    raise BadEnvelope(f"broker message field 'kind': unknown {kind!r}")


# -- connecting ----------------------------------------------------------------------------------


async def connect(url: str, *, robust: bool) -> Any:
    """An aio-pika connection; `KuukiError` naming the (masked) URL when it fails."""
    try:
        import aio_pika
    except ImportError:
        raise KuukiError(
            "scale-out needs the RabbitMQ client: pip install 'kuuki[scale]'"
        ) from None
    remember_url(url)  # aiormq's errors may quote the URL, password and all
    try:
        if robust:
            return await aio_pika.connect_robust(url)
        return await aio_pika.connect(url)
    except (TimeoutError, OSError, ConnectionError) as exc:
        raise KuukiError(
            f"cannot reach the broker at {mask_raw(url)} (KUUKI_BROKER_URL): "
            f"{redact(str(exc))}"
        ) from exc
    except Exception as exc:  # aiormq's auth and protocol errors
        raise KuukiError(
            f"the broker at {mask_raw(url)} (KUUKI_BROKER_URL) refused: "
            f"{type(exc).__name__}: {redact(str(exc))}"
        ) from exc


async def declare(channel: Any, partitions: int) -> tuple[Any, list[Any]]:
    """Declare the exchange and the partition queues; returns (exchange, queues)."""
    import aio_pika

    try:
        exchange = await channel.declare_exchange(
            EXCHANGE, aio_pika.ExchangeType.X_CONSISTENT_HASH, durable=True
        )
    except Exception as exc:
        raise KuukiError(
            "the broker has no consistent-hash exchange: enable it with "
            "`rabbitmq-plugins enable rabbitmq_consistent_hash_exchange`"
            f" ({type(exc).__name__}: {redact(str(exc))})"
        ) from exc
    queues = []
    for p in range(partitions):
        # Quorum queues: single-active-consumer on classic queues could crash the queue
        # instead of failing over in RabbitMQ 3.10.6-3.11 (rabbitmq-server#5460).
        queue = await channel.declare_queue(
            queue_name(p), durable=True,
            arguments={"x-queue-type": "quorum", "x-single-active-consumer": True},
        )
        await queue.bind(exchange, routing_key="1")
        queues.append(queue)
    return exchange, queues


class Publisher:
    """A gateway's side: envelopes out, in call order, each confirmed by the broker."""

    def __init__(self, url: str, partitions: int) -> None:
        self.url = url
        self.partitions = partitions
        self._connection: Any = None
        self._exchange: Any = None
        self.published = 0

    async def open(self) -> None:
        self._connection = await connect(self.url, robust=True)
        channel = await self._connection.channel(publisher_confirms=True)
        self._exchange, _ = await declare(channel, self.partitions)

    async def publish(self, items: Sequence[Envelope]) -> None:
        """Publish ``items`` in order; returns once the broker confirmed every one (it
        has them on disk), raises if it refused any."""
        import aio_pika

        if self._exchange is None:
            raise KuukiError("the publisher is not open")
        # Tasks start in creation order and aiormq writes each publish under a FIFO lock,
        # so the frames leave in this order while the confirms are awaited together.
        sends = [
            asyncio.ensure_future(self._exchange.publish(
                aio_pika.Message(encode(item), delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                                 content_type="application/json"),
                routing_key=item.routing_key,
            ))
            for item in items
        ]
        results = await asyncio.gather(*sends, return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            raise failed[0]
        self.published += len(items)

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
            self._connection = None
