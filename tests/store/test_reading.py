"""The commands that only read (`stats`, `why`, `memory list|show`, `doctor`, `dashboard
--store`) leave a store exactly as they found it, on SQLite and PostgreSQL: a 0-byte file,
another application's database, an empty one, a kuuki store at an older or a newer schema,
one on a read-only mount. What they cannot read is refused with one line; `kuuki store migrate` migrates on
purpose.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from kuuki.cli import main
from kuuki.settings.urls import normalise_url
from kuuki.store import MIGRATIONS, Store, migrate
from kuuki.store.reading import Kind, look

LINES = [
    {"setup": {"bot": "Kuu", "language": "en"}},
    {"id": "a1", "t": "2026-01-05T10:00:00+00:00", "channel": "general", "user": "alice",
     "text": "hi all"},
    {"id": "a2", "t": "2026-01-05T10:00:30+00:00", "channel": "general", "user": "carol",
     "text": "Kuu, any idea where to eat tonight?"},
]
CURRENT = MIGRATIONS[-1].version
READERS: dict[str, list[str]] = {
    "stats": ["stats", "--since", "200w"],
    "why": ["why"],
    "memory list": ["memory", "list"],
    "memory show": ["memory", "show", "--channel", "general"],
    "doctor": ["doctor"],
    "dashboard": ["dashboard", "--port", "0"],
}
_SERVING = re.compile(r"kuuki dashboard: (http://127\.0\.0\.1:\d+/) ")


def run(argv: list[str], store: str, env: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """One command against ``store`` (``--store`` where the command takes it, and the
    setting for `doctor`, which checks the configured one), as a person types it."""
    env.setenv("KUUKI_STORE_URL", store)
    env.setenv("KUUKI_LLM", "none")
    args = list(argv)
    if argv[0] != "doctor":
        args += ["--store", store]
    if argv[0] == "dashboard":
        return serve_and_read(args)
    code = main(args)
    out, err = capsys.readouterr()
    if argv[0] == "doctor":  # its other checks (no platform token here) fail on their own
        store_line = next(ln for ln in out.splitlines() if ln[2:].startswith("store:"))
        return (0 if store_line.startswith("✓") else 1), store_line + err
    return code, out + err


def serve_and_read(args: list[str]) -> tuple[int, str]:
    """`kuuki dashboard` serves until Ctrl-C, so it runs as a process: its page is read (the
    overview of everything in the store, the latest decisions) and it is stopped with
    Ctrl-C; a store it cannot read ends it at once with its line."""
    # Ctrl-C's default action, as in a terminal: a suite started in the background
    # (`.ci/run &`) would hand its children an ignored SIGINT, and then nothing stops it
    proc = subprocess.Popen([sys.executable, "-m", "kuuki.cli", *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None
    first = proc.stdout.readline()
    found = _SERVING.search(first)
    if found is None:
        out, err = proc.communicate(timeout=120)
        return proc.returncode, first + out + err
    try:
        with httpx.Client(base_url=found.group(1), timeout=60) as client:
            overview = client.get("/api/overview", params={"window": "all"}).json()
            decisions = client.get("/api/decisions").json()["decisions"]
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    about = sorted(d["after"] for d in decisions)
    return 0, (f"{first}{out}{err}messages {overview['totals']['messages']}; "
               f"decisions about {', '.join(about)}")


def fill(store: str, tmp_path: Path) -> None:
    """A kuuki store with two messages and their decisions, written by a replay."""
    path = tmp_path / "fill.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in LINES) + "\n")
    assert main(["replay", str(path), "--llm", "none", "--store", store]) == 0


def migrate_to(url: str, version: int) -> None:
    async def go() -> None:
        engine = create_async_engine(normalise_url(url))
        try:
            await migrate(engine, upto=version)
        finally:
            await engine.dispose()
    asyncio.run(go())


def execute(url: str, *statements: str) -> None:
    async def go() -> None:
        engine = create_async_engine(normalise_url(url))
        try:
            async with engine.begin() as conn:
                for s in statements:
                    await conn.execute(text(s))
        finally:
            await engine.dispose()
    asyncio.run(go())


# --- SQLite: the bytes of the file and the files beside it ----------------------------------

def snapshot(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir())}


def foreign(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("create table invoices (id integer primary key, total real)")
    db.execute("insert into invoices (total) values (12.5)")
    db.commit()
    db.close()


def sqlite_kinds(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name → (the database file, the line a reading command refuses it with)."""
    made: dict[str, tuple[Path, str]] = {}
    d = tmp_path / "zero"
    d.mkdir()
    (d / "kuuki.db").write_bytes(b"")
    made["0-byte file"] = (d / "kuuki.db", "is an empty database, not a kuuki store")
    d = tmp_path / "foreign"
    d.mkdir()
    foreign(d / "app.db")
    made["another application's"] = (d / "app.db", "is not a kuuki store: it holds the "
                                     "tables invoices and no schema_migrations")
    d = tmp_path / "old"
    d.mkdir()
    migrate_to(f"sqlite:///{d}/kuuki.db", 3)
    made["older schema"] = (d / "kuuki.db", f"is a kuuki store at schema version 3; this "
                            f"kuuki reads version {CURRENT}. Back it up first: `kuuki run` "
                            "migrates it on start, or `kuuki store migrate` does it now")
    d = tmp_path / "new"
    d.mkdir()
    fill(f"sqlite:///{d}/kuuki.db", tmp_path)
    execute(f"sqlite:///{d}/kuuki.db", "insert into schema_migrations (version, name, "
            f"applied_at) values ({CURRENT + 1}, 'from_the_future', '2027-01-01')")
    made["newer schema"] = (d / "kuuki.db", f"was written by a newer kuuki (schema version "
                            f"{CURRENT + 1}; this kuuki reads version {CURRENT})")
    return made


@pytest.mark.parametrize("command", list(READERS))
def test_a_reading_command_changes_no_byte_of_what_it_cannot_read(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for kind, (path, refused) in sqlite_kinds(tmp_path).items():
        before = snapshot(path.parent)
        code, said = run(READERS[command], f"sqlite:///{path}", monkeypatch, capsys)
        assert snapshot(path.parent) == before, (command, kind)
        if command == "doctor" and kind == "0-byte file":
            assert code == 0 and "connected, empty" in said, said  # kuuki run would fill it
            continue
        assert code == (1 if command == "doctor" else 2), (command, kind, said)
        if kind == "older schema" and command == "doctor":
            pending = len(MIGRATIONS) - 3  # the older schema stops at version 3
            assert f"migrations not current, {pending} of {len(MIGRATIONS)} pending" in said
            assert "back the database up, then run `kuuki store migrate`" in said
        elif kind == "newer schema" and command == "doctor":
            assert "was migrated by a newer kuuki" in said
        else:
            assert refused in said, (command, kind, said)
        assert "Traceback" not in said


@pytest.mark.parametrize("command", list(READERS))
def test_a_reading_command_reads_a_store_and_changes_no_byte_of_it(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    d = tmp_path / "store"
    d.mkdir()
    fill(f"sqlite:///{d}/kuuki.db", tmp_path)
    before = snapshot(d)
    assert set(before) == {"kuuki.db"}  # a store closed cleanly: no -wal beside it
    code, said = run(READERS[command], f"sqlite:///{d}/kuuki.db", monkeypatch, capsys)
    assert code == 0, said
    assert snapshot(d) == before
    expected = {"stats": "general", "why": "message a2", "memory list": "general",
                "memory show": "#general", "doctor": f"schema current (version {CURRENT})",
                "dashboard": "messages 3; decisions about a1, a2"}  # a2 was answered
    assert expected[command] in said, said


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[Path]:
    """``directory``'s files on a read-only mount (root: a tmpfs remounted ro), else a
    directory and files without write permission (what stops a non-root process)."""
    if os.geteuid() != 0:
        for p in directory.iterdir():
            p.chmod(0o444)
        directory.chmod(0o555)
        try:
            yield directory
        finally:
            directory.chmod(0o755)
        return
    mount = directory.parent / "ro-mount"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(mount)], check=True)
    try:
        for p in directory.iterdir():
            (mount / p.name).write_bytes(p.read_bytes())
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.parametrize("command", ["stats", "why", "memory list", "doctor", "dashboard"])
def test_a_store_on_a_read_only_mount_is_read(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    d = tmp_path / "store"
    d.mkdir()
    fill(f"sqlite:///{d}/kuuki.db", tmp_path)
    with read_only(d) as where:
        before = snapshot(where)
        code, said = run(READERS[command], f"sqlite:///{where}/kuuki.db", monkeypatch, capsys)
        assert snapshot(where) == before
    assert code == 0, said
    assert "unable to open" not in said


def test_a_live_bots_store_is_read_through_its_wal(tmp_path: Path) -> None:
    async def go() -> None:
        url = f"sqlite:///{tmp_path}/kuuki.db"
        writer = await Store.open(url)
        try:
            from datetime import UTC, datetime

            from kuuki.domain import Channel, User
            await writer.roster.upsert_channel(Channel("c1", "general", "public"))
            await writer.roster.upsert_user(User("u1", "alice"), datetime(2026, 1, 5, tzinfo=UTC))
            assert Path(f"{tmp_path}/kuuki.db-wal").exists()  # the writer holds it open
            reader = await Store.open_to_read(url)
            try:
                assert [c.name for c in await reader.roster.channels()] == ["general"]
                assert reader.read_only
                with pytest.raises(Exception, match="opened only to read"):
                    reader.writer  # noqa: B018
            finally:
                await reader.close()
        finally:
            await writer.close()
    asyncio.run(go())


def test_no_reading_command_creates_the_default_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("KUUKI_STORE_URL", raising=False)
    monkeypatch.setenv("KUUKI_LLM", "none")
    for argv in READERS.values():
        code = main(argv)
        said = "".join(capsys.readouterr())
        assert code in ((0, 1) if argv == ["doctor"] else (2,)), (argv, said)
        assert "nothing was ever recorded there" in said or argv == ["doctor"], said
        assert not (tmp_path / "data").exists(), argv
    assert list(tmp_path.iterdir()) == []


def test_store_migrate_migrates_on_purpose_and_refuses_what_is_not_kuukis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    migrate_to(f"sqlite:///{tmp_path}/old.db", 3)
    assert main(["store", "migrate", "--store", str(tmp_path / "old.db")]) == 0
    assert f"migrated from version 3 to version {CURRENT}" in capsys.readouterr().out
    assert main(["store", "migrate", "--store", str(tmp_path / "old.db")]) == 0
    assert "schema current" in capsys.readouterr().out
    foreign(tmp_path / "app.db")
    before = snapshot(tmp_path)
    assert main(["store", "migrate", "--store", str(tmp_path / "app.db")]) == 2
    assert "is not a kuuki store" in capsys.readouterr().err
    assert snapshot(tmp_path) == before


# --- PostgreSQL: the tables, their rows and the versions --------------------------------------

def pg_state(url: str) -> dict[str, object]:
    async def go() -> dict[str, object]:
        engine = create_async_engine(normalise_url(url))
        try:
            async with engine.connect() as conn:
                names = sorted((await conn.execute(text(
                    "select tablename from pg_tables where schemaname = current_schema()"
                ))).scalars())
                state: dict[str, object] = {}
                for name in names:
                    rows = (await conn.execute(text(f'select * from "{name}"'))).all()
                    state[name] = sorted(repr(tuple(r)) for r in rows)
                return state
        finally:
            await engine.dispose()
    return asyncio.run(go())


PG_KINDS: dict[str, Callable[[str, Path], str]] = {
    "empty": lambda url, tmp: "is an empty database, not a kuuki store",
    "another application's": lambda url, tmp: (
        execute(url, "create table invoices (id serial primary key, total real)",
                "insert into invoices (total) values (12.5)")
        or "is not a kuuki store: it holds the tables invoices"),
    "older schema": lambda url, tmp: (
        migrate_to(url, 3) or f"is a kuuki store at schema version 3; this kuuki reads "
        f"version {CURRENT}"),
    "newer schema": lambda url, tmp: (
        fill(url, tmp)
        or execute(url, "insert into schema_migrations (version, name, applied_at) values "
                   f"({CURRENT + 1}, 'from_the_future', '2027-01-01')")
        or "was written by a newer kuuki"),
    "current": lambda url, tmp: fill(url, tmp) or "",
}


@pytest.mark.postgres
@pytest.mark.parametrize("kind", list(PG_KINDS))
def test_postgres_tables_are_unchanged_by_every_reading_command(
    kind: str, postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    refused = PG_KINDS[kind](postgres_url, tmp_path)
    before = pg_state(postgres_url)
    for command, argv in READERS.items():
        code, said = run(argv, postgres_url, monkeypatch, capsys)
        assert pg_state(postgres_url) == before, (kind, command)
        if kind == "current":
            assert code == 0, (command, said)
        elif command == "doctor":
            assert code == (0 if kind == "empty" else 1), said
        else:
            assert code == 2 and refused in said, (kind, command, said)
        assert "kuuki:kuuki@" not in said


@pytest.mark.postgres
def test_a_postgres_session_opened_to_read_cannot_write(postgres_url: str, tmp_path: Path) -> None:
    fill(postgres_url, tmp_path)

    async def go() -> None:
        store = await Store.open_to_read(postgres_url)
        try:
            assert (await look(normalise_url(postgres_url))).kind is Kind.CURRENT
            async with store.engine.connect() as conn:
                with pytest.raises(Exception, match="read-only transaction"):
                    await conn.execute(text("delete from messages"))
        finally:
            await store.close()
    asyncio.run(go())
