"""`kuuki bench repeats [DATA_DIR]`: how well "the same asked in other words" is told.

Two figures, per threshold on the swapped words' cosine (kuuki.decide.stages.rephrased):
- on `repeat_pairs.jsonl` (paraphrase pairs and near-miss different questions, English and
  Japanese, written for this benchmark): how many paraphrases are caught, how many
  near-misses wrongly folded;
- on the dev splits (Ubuntu IRC dev: one author's messages within 2 minutes of each other;
  MRMP dev, no timestamps: an author's message and their previous one at most 3 messages
  back): how many would be folded — each a real message the bot might leave unanswered,
  had the first been owed an answer. Exact copies (`same_text`, folded before) are counted
  apart.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from kuuki.conversation.ircdata import read_ascii, split_files
from kuuki.conversation.mrmp import read_split
from kuuki.decide.stages.rephrased import SYNONYM, Embed, rephrased
from kuuki.decide.stages.sent_twice import same_text
from kuuki.embed import default_embedder

THRESHOLDS = (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 1.01)


def dev_pairs(data: Path) -> Iterator[tuple[str, str, str]]:
    """(corpus, earlier, later) for one author's consecutive messages within the window."""
    for ascii_path, _ in split_files(data / "irc-disentanglement" / "dev"):
        last: dict[str, tuple[float, str]] = {}
        for ln in read_ascii(ascii_path):
            if ln.system or ln.minute is None:
                continue
            prev = last.get(ln.speaker)
            if prev is not None and ln.minute - prev[0] <= 2:
                yield "irc", prev[1], ln.text
            last[ln.speaker] = (ln.minute, ln.text)
    for d in read_split(data / "mrmp" / "dialogues" / "dev"):
        us = d.utterances
        for k, u in enumerate(us):
            for j in range(k - 1, max(-1, k - 4), -1):
                if us[j].speaker == u.speaker:
                    yield "mrmp", us[j].text, u.text
                    break


def main(argv: list[str]) -> int:
    data = Path(argv[0]) if argv else Path("../shared/data")
    embed: Embed = default_embedder().embed
    raw = resources.files("kuuki.bench").joinpath("repeat_pairs.jsonl").read_text("utf-8")
    pairs = [json.loads(line) for line in raw.splitlines() if line.strip()]
    dev = list(dev_pairs(data))
    exact = {c: sum(1 for k, a, b in dev if k == c and same_text(a) == same_text(b))
             for c in ("irc", "mrmp")}
    total = {c: sum(1 for k, _, _ in dev if k == c) for c in ("irc", "mrmp")}
    print(f"dev pairs: irc {total['irc']} (exact copies {exact['irc']}), "
          f"mrmp {total['mrmp']} (exact copies {exact['mrmp']}); chosen SYNONYM={SYNONYM}")
    for t in THRESHOLDS:
        row: dict[str, object] = {"synonym": t}
        for lang in ("en", "ja"):
            for kind in ("same", "different"):
                sel = [p for p in pairs if p["lang"] == lang and p["kind"] == kind]
                hit = sum(1 for p in sel
                          if rephrased(p["first"], p["again"], embed, synonym=t) is not None)
                row[f"{lang}_{kind}"] = f"{hit}/{len(sel)}"
        for c in ("irc", "mrmp"):
            folded = [(a, b) for k, a, b in dev if k == c and same_text(a) != same_text(b)
                      and rephrased(a, b, embed, synonym=t) is not None]
            row[f"{c}_folded"] = len(folded)
            if t == SYNONYM:
                for a, b in folded:
                    print(f"  {c} folded at {t}: {a!r} / {b!r}")
        print(json.dumps(row, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
