"""How often each name-call pattern of kuuki's AddressDetector fires on a corpus, and how
often the message is then, by the gold links, to the participant it names.

    python docs/tools/name_call_precision.py ../shared/data/irc-disentanglement/dev

Every participant of a chat is taken in turn as the bot (its names as the chat gives
them); a message by someone else that a pattern reads as a call to it counts as a hit
when the gold addressee is that participant. A message to several people has one gold
addressee, so a list of people ("leagris, wols, how…") counts as right for one of them.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from kuuki.decide.addressing.names import AddressDetector, normalise
from kuuki.decide.training.evaluate import read_chats

PATTERNS = ("@name", "start", "end", "mid vocative", "topic question", "after openers",
            "in brackets", "in a list (after)", "in a list (first)", "between commas",
            "after a clause", "after proposing to ask it (en)", "after proposing to ask it (ja)")


def main(folders: list[str]) -> None:
    for folder in folders:
        kind, chats = read_chats(Path(folder))
        fired: Counter[str] = Counter()
        right: Counter[str] = Counter()
        calls = hits = 0
        for chat in chats:
            detectors = {k: AddressDetector(list(v)) for k, v in chat.names.items()}
            for i, gold in chat.labels.items():
                turn = chat.turns[i]
                text = normalise(turn.text)
                for key, det in detectors.items():
                    if key == turn.speaker or not det.mentions_name(turn.text):
                        continue
                    found = [n for n, p in zip(PATTERNS, det._calls, strict=True)
                             if p.search(text)]
                    if found:
                        calls += 1
                        hits += gold == key
                    for n in found:
                        fired[n] += 1
                        right[n] += gold == key
        print(f"{folder} ({kind}): any pattern {hits}/{calls}")
        for n in PATTERNS:
            if fired[n]:
                print(f"  {n:20s} {right[n]}/{fired[n]} = {right[n] / fired[n]:.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
