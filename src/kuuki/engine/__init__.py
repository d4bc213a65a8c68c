"""The engine: one ordered queue per channel and the steps of one message, read top to
bottom: core (the queues, composition) → intake (0) → filter (1) → record (1-4) → worker
(hands each item forward) → deciding (5, around the `Decider` port) → act (6-7). Each step
is an object built with explicit collaborators; every one from outside is a port
(`kuuki.ports`). `channels` holds the per-channel state and its bounds; `config` the few
settings the engine reads.
"""
