"""`kuuki store migrate`: bring a store to this kuuki's schema on purpose.

The reading commands (`why`, `stats`, `memory list|show`, `doctor`, the dashboard) never
migrate: a store at an older schema is refused with a line that points here. `kuuki run`
migrates on start as it always did; this command does the same and nothing else, so an
operator can back a store up, migrate it, and read it again without starting a bot.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any, TextIO

from kuuki.cli.common import settings_for
from kuuki.errors import StoreError
from kuuki.settings.urls import path_or_url


def add_store_parser(sub: Any) -> None:
    st = sub.add_parser("store", help="the store itself: migrate it to this kuuki's schema")
    ssub = st.add_subparsers(dest="what", required=True, metavar="ACTION")
    mg = ssub.add_parser(
        "migrate", help="apply the schema migrations this kuuki knows (back the store up "
        "first); the reading commands never do")
    mg.add_argument("--store", metavar="PATH",
                    help="the SQLite file (or database URL) to migrate (default: configured)")
    mg.set_defaults(fn=cmd_store)


def cmd_store(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    url = path_or_url(args.store) if args.store else (settings.store_url or None)
    return asyncio.run(run_migrate(url, sys.stdout))


async def run_migrate(url: str | None, out: TextIO) -> int:
    """Migrate the kuuki store at ``url`` (an empty database becomes one); refuse no file,
    another application's database and one a newer kuuki wrote."""
    from kuuki.settings.urls import normalise_url
    from kuuki.store import Store
    from kuuki.store.reading import Kind, look, refusal

    parsed = normalise_url(url)
    found = await look(parsed)
    if found.kind in (Kind.MISSING, Kind.FOREIGN, Kind.NEWER):
        raise StoreError(refusal(found) or found.shown)
    if found.kind is Kind.CURRENT:
        out.write(f"{found.shown}: schema current (version {found.version}); nothing to do\n")
        return 0
    store = await Store.open(url)
    try:
        after = await look(parsed)
    finally:
        await store.close()
    before = "an empty database" if found.kind is Kind.EMPTY else f"version {found.version}"
    out.write(f"{found.shown}: migrated from {before} to version {after.version}\n")
    return 0
