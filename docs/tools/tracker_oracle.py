"""The disentangler's numbers on two streams, as digests: for checking a change keeps them.

    python docs/tools/tracker_oracle.py [messages channels [--observe-only]]

Feeds `kuuki bench ingest`'s synthetic chat (4000 messages in 40 channels by default)
through one ConversationTracker per channel with the shipped StaticEmbedder, hashing every
message's candidates and link probabilities, its assignment and per-conversation mass;
then disentangles every file of ../shared/data/irc-disentanglement/dev online, hashing each
line's feature rows (`ChannelFeatures.features`) and links. Prints the CPU seconds of
`observe`, the features digest and one digest over everything. Used for issue 36: run it
from each tree's venv; the digests must match (the timing is only indicative). With
`--observe-only` it only feeds the stream (no hashing, no IRC files): the workload whose
instructions docs/benchmarks.md counts for `observe`.
"""

# ruff: noqa: I001  (kuuki before numpy: it sets single-threaded BLAS first)
from __future__ import annotations

import hashlib
import pickle
import sys
import time
from pathlib import Path
from typing import Any

import kuuki  # noqa: F401
import numpy as np
from kuuki.bench.ingest import synthetic_events
from kuuki.conversation import disentangler
from kuuki.conversation.features import ChannelFeatures
from kuuki.conversation.model import shipped_model
from kuuki.conversation.tracker import ConversationTracker
from kuuki.conversation.train import load_split
from kuuki.embed.static import StaticEmbedder
from kuuki.settings import Settings

IRC_DEV = Path(__file__).resolve().parents[2] / "../shared/data/irc-disentanglement/dev"


def main(messages: int, channels: int, observe_only: bool) -> None:
    digest = hashlib.sha256()
    embedder = StaticEmbedder()
    names = tuple(Settings().persona.names)
    score = disentangler.Disentangler.score

    def hashed_score(self: Any, turn: Any) -> Any:
        cand, probs = score(self, turn)
        digest.update(cand.tobytes())
        digest.update(probs.tobytes())
        return cand, probs

    if not observe_only:
        disentangler.Disentangler.score = hashed_score  # type: ignore[method-assign]
    trackers: dict[str, ConversationTracker] = {}
    seen = []
    spent = 0.0
    for event in synthetic_events(messages, channels):
        msg = event.message
        assert msg is not None
        tracker = trackers.get(msg.channel_id)
        if tracker is None:
            tracker = ConversationTracker(msg.channel_id, embedder=embedder, bot_names=names)
            trackers[msg.channel_id] = tracker
        start = time.process_time()
        assignment = tracker.observe(msg)
        spent += time.process_time() - start
        if not observe_only:
            seen.append((assignment, sorted(tracker._seen[msg.id].mass.items())))
    print(f"observe {spent:.3f} s CPU, {1e6 * spent / max(messages, 1):.1f} us a message")
    if observe_only:
        return
    digest.update(pickle.dumps(seen))
    features = hashlib.sha256()
    rows = ChannelFeatures.features

    def hashed_rows(self: Any, turn: Any) -> Any:
        cand, x = rows(self, turn)
        features.update(cand.tobytes())
        features.update(np.ascontiguousarray(x).tobytes())
        return cand, x

    ChannelFeatures.features = hashed_rows  # type: ignore[method-assign]
    files = load_split(IRC_DEV.resolve(), embedder)
    links = [disentangler.disentangle_links(f.lines, f.vectors, shipped_model()) for f in files]
    digest.update(pickle.dumps(links))
    print("irc dev features", features.hexdigest()[:16])
    print("all", digest.hexdigest()[:16])


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:3]] or [4000, 40]
    main(sizes[0], sizes[1], "--observe-only" in sys.argv)
