"""The compact noun table answers as lemminflect's own lookup does, word for word."""

from __future__ import annotations

import gzip

from lemminflect import config, getAllLemmas

from kuuki.memory.keywords import topics
from kuuki.memory.nouns import nouns


def _lemminflect_reading(word: str) -> tuple[bool, str | None]:
    readings = getAllLemmas(word)
    found = readings.get("NOUN") or readings.get("PROPN")
    return bool(readings), str(found[0]) if found else None


def test_every_word_of_lemminflects_table_reads_the_same() -> None:
    with gzip.open(config.lemma_lu_fn, "rt") as f:
        words = {line.split(",")[0].lower() for line in f}
    with open(config.lemma_overrides_fn) as f:
        words |= {line.split(",")[0] for line in f if line.strip() and line[0] != "#"}
    # words the dictionary does not know, before, between and after its entries
    words |= {"", "aaaaa", "kubernetes", "c++", "node.js", "zzzzzz", "k8s", "dockerfile"}
    table = nouns()
    differ = [w for w in sorted(words) if table.noun_reading(w) != _lemminflect_reading(w)]
    assert differ == []
    assert table.noun_reading("cats") == (True, "cat")
    assert table.noun_reading("probably") == (True, None)
    assert table.noun_reading("kubernetes") == (False, None)


def test_topics_keep_nouns_and_names_in_their_singular() -> None:
    assert topics(["the cats were telling me about kubernetes clusters, probably"]) == [
        "cat", "kubernetes", "cluster",
    ]
