"""The engine: one ordered queue per channel and the steps of one message, read top to
bottom as a message goes: core (composition, public face) → intake (0) → worker (the
channels' queues) → record (1-4, with filter: step 1) → deciding (5, around the `Decider`
port) → act (6-7). Each step is an object built with explicit collaborators; every one
from outside is a port (`kuuki.ports`). `timeline` is what a message joining the channel
writes (for the recorder and, for the bot's own message, the actor); `channels` holds the
per-channel state and its bounds; `config` the few settings the engine reads.
"""
