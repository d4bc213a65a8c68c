"""Scale-out: gateways take events in, workers own channels, RabbitMQ between.

    Discord shards ─┐                                    ┌─▶ worker 0 ─┐
    Slack HTTP  ────┼─ gateway ── publish (confirmed) ──▶ RabbitMQ ──┼─▶ worker 1 ─┼─▶ PostgreSQL
    Slack HTTP  ────┴─ gateway      routing key = channel id  └─▶ worker 2 ─┘   (one store)

A gateway (`kuuki gateway`) runs the platform connections and hands every event, in
order, to the broker; the platform hears it arrived once the broker has confirmed it. The
broker's consistent-hash exchange puts a channel on one of P partition queues; each queue
has a single active consumer, so a channel's events reach one worker, in order, and its
in-memory state stays there. A worker (`kuuki worker`) runs the engine: the inbox's
unique event id drops redeliveries, the reply goes out through the platform's REST API,
and a message is acknowledged only once what handling it wrote is committed. A worker that
dies leaves its messages unacknowledged: RabbitMQ gives them, in order, to the queue's
standby consumer, which first reads the channel back (the store's pending events and the
platform's history, where an answer sent just before the death is found) so nothing is
lost or answered twice. See docs/scaling.md.
"""
