"""What a SQLite store holds, as one digest: for comparing two runs that must store the same.

    python docs/tools/store_digest.py STORE.sqlite3

Prints each table's row count and a SHA-1 over its rows, sorted, then one over all tables.
Left out are what differs between two runs of the same code: row ids and a message's `seq`
(insertion order), and wall-clock times (`applied_at`, `decided_at`, a trace's `started_at`
and every `*_ms` figure). Used for issue 23: `kuuki bench ingest --messages 3000 --channels
30 --store sqlite:///before.sqlite3` on each tree, then this on both files.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from typing import Any

DROP = {"seq", "id", "rowid", "applied_at", "decided_at"}


def clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()
                if not k.endswith("_ms") and k != "started_at"}
    if isinstance(value, list):
        return [clean(v) for v in value]
    return value


def table_digest(db: sqlite3.Connection, table: str) -> tuple[int, str]:
    cols = [r[1] for r in db.execute(f"pragma table_info({table})") if r[1] not in DROP]
    rows = []
    for row in db.execute(f"select {','.join(cols)} from {table}"):
        values = list(row)
        for i, col in enumerate(cols):
            if col == "trace" and values[i]:
                values[i] = json.dumps(clean(json.loads(values[i])), sort_keys=True)
        rows.append(repr(values))
    rows.sort()
    return len(rows), hashlib.sha1("\n".join(rows).encode()).hexdigest()[:12]


def main(path: str) -> None:
    db = sqlite3.connect(path)
    whole = hashlib.sha1()
    tables = [t for (t,) in db.execute(
        "select name from sqlite_master where type='table' order by name")]
    for table in tables:
        count, digest = table_digest(db, table)
        print(table, count, digest)
        whole.update(digest.encode())
    print("ALL", whole.hexdigest()[:12])


if __name__ == "__main__":
    main(sys.argv[1])
