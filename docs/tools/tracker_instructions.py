"""A fixed workload of the disentangler, for counting its instructions with callgrind.

    python docs/tools/tracker_instructions.py setup STATE.pkl
    valgrind --tool=callgrind python docs/tools/tracker_instructions.py loop STATE.pkl N features
    valgrind --tool=callgrind python docs/tools/tracker_instructions.py loop STATE.pkl N score

`setup` feeds 3,960 messages of `kuuki bench ingest`'s synthetic chat (4,000 in 40
channels) through one ConversationTracker per channel and pickles each channel's
disentangler with its next message; `loop` runs `features` (or `score`: features and the
MLP) for those 40 messages N times. The instructions of N = 10 minus those of N = 0,
divided by 400, are a call's, whatever the machine's load (issue 36, docs/benchmarks.md).
Make STATE.pkl with the tree whose code is counted.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import kuuki  # noqa: F401  (before numpy: it sets single-threaded BLAS)
from kuuki.conversation.history import Post


def setup(out: Path) -> None:
    from kuuki.bench.ingest import synthetic_events
    from kuuki.conversation.tracker import ConversationTracker
    from kuuki.embed.static import StaticEmbedder
    from kuuki.settings import Settings

    embedder = StaticEmbedder()
    names = tuple(Settings().persona.names)
    messages = [e.message for e in synthetic_events(4000, 40) if e.message is not None]
    trackers: dict[str, ConversationTracker] = {}
    for m in messages[:-40]:
        if m.channel_id not in trackers:
            trackers[m.channel_id] = ConversationTracker(
                m.channel_id, embedder=embedder, bot_names=names
            )
        trackers[m.channel_id].observe(m)
    work = [
        (
            trackers[m.channel_id]._dis,
            Post(
                speaker=m.user.id,
                text=m.text,
                minute=m.ts.timestamp() / 60,
                vector=embedder.embed([m.text])[0],
                aliases=(m.user.id, m.user.name),
            ),
        )
        for m in messages[-40:]
    ]
    out.write_bytes(pickle.dumps(work))


def loop(state: Path, times: int, what: str) -> None:
    work = pickle.loads(state.read_bytes())
    for _ in range(times):
        for dis, turn in work:
            dis.state._pending = None  # analyse the message again, as a new one would be
            if what == "features":
                dis.state.features(turn)
            else:
                dis.score(turn)


if __name__ == "__main__":
    if sys.argv[1] == "setup":
        setup(Path(sys.argv[2]))
    else:
        loop(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
