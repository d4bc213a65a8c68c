"""The parent's side of the crash tests and `kuuki bench crash`: a bot in its own process
(kuuki.testing.bot_process) that can be SIGKILLed, and what is read back from the store
once it is gone."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from kuuki.store import Store


class BotProcess:
    """``python -m kuuki.testing.bot_process`` for one platform; start, kill, start again."""

    def __init__(self, platform: str, *, api: str, store: str, accepted: Path, token: str,
                 env: dict[str, str] | None = None) -> None:
        self.platform, self.api, self.store, self.token = platform, api, store, token
        self.accepted_path = accepted
        self.env = {**os.environ, "KUUKI_LLM": "stub", "KUUKI_JUDGE_LLM": "stub", **(env or {})}
        self.proc: asyncio.subprocess.Process | None = None
        self.kills = 0
        self.log = accepted.with_suffix(".log")

    async def start(self, timeout: float = 60) -> None:
        """Start the bot and wait until it has connected and caught up ("ready")."""
        with self.log.open("ab") as err:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "kuuki.testing.bot_process", self.platform,
                "--api", self.api, "--store", self.store, "--token", self.token,
                "--accepted", str(self.accepted_path),
                stdout=asyncio.subprocess.PIPE, stderr=err, env=self.env,
            )
        assert self.proc.stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                line = await self.proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"the bot exited before it was ready; see {self.log}:\n"
                                       + self.log.read_text(errors="replace")[-3000:])
                if line.strip() == b"ready":
                    return

    async def kill(self) -> None:
        """SIGKILL: the crash. Nothing in the bot runs after it."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()
        self.kills += 1

    async def stop(self, timeout: float = 60) -> int:
        """SIGTERM: the ordinary stop (queued work finished, the store flushed)."""
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(timeout):
                    await self.proc.wait()
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
                raise
        return int(self.proc.returncode or 0)

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()

    @property
    def accepted(self) -> list[str]:
        if not self.accepted_path.exists():
            return []
        return [x for x in self.accepted_path.read_text().split("\n") if x]


async def stored_ids(store_url: str, ids: Iterable[str]) -> set[str]:
    store = await Store.open(store_url)
    try:
        return {m.id for m in await store.history.messages_by_ids(list(ids))}
    finally:
        await store.close()


async def decisions(store_url: str, ids: Iterable[str]) -> dict[str, list[dict[str, object]]]:
    store = await Store.open(store_url)
    try:
        return {mid: await store.browse.decisions_for(mid) for mid in ids}
    finally:
        await store.close()


async def pending(store_url: str) -> int:
    store = await Store.open(store_url)
    try:
        return len(await store.inbox.pending_events())
    finally:
        await store.close()


class PrivateServer:
    """A throwaway PostgreSQL cluster of the installed server binaries, which a test may
    stop and start again. The shared server of KUUKI_TEST_POSTGRES_URL is never stopped:
    other tests (and other people) use it at the same time. initdb and the server run as
    the ``postgres`` account when the tests run as root (the server refuses root)."""

    def __init__(self, bindir: Path, root: Path, port: int) -> None:
        self.bindir, self.data, self.port = bindir, root / "data", port
        self.root = root

    @staticmethod
    def find_bindir() -> Path | None:
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                       key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit()
                       else 0)
        return found[-1].parent if found else None

    def _as_server_user(self, *argv: str) -> list[str]:
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *argv]
        return list(argv)

    async def _run(self, *argv: str) -> None:
        proc = await asyncio.create_subprocess_exec(
            *self._as_server_user(*argv), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, cwd="/tmp",
        )
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed: {out.decode(errors='replace')[-2000:]}")

    async def init(self) -> None:
        if os.geteuid() == 0:
            import shutil

            shutil.chown(self.root, "postgres", "postgres")
        await self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
                        "--auth=trust", "-E", "UTF8", "--no-instructions")

    async def start(self) -> None:
        await self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-w", "-l",
            str(self.root / "server.log"), "-o",
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1", "start",
        )

    async def stop(self) -> None:
        """A fast shutdown: sessions are cut, new connections refused until `start`."""
        await self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-w", "-m", "fast",
                        "stop")

    async def create_database(self, name: str) -> str:
        await self._run(str(self.bindir / "psql"), "-X", "-q", "-h", str(self.root), "-p",
                        str(self.port), "-U", "postgres", "-d", "postgres", "-c",
                        f"CREATE DATABASE {name}")
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_port() -> int:
    """A free port for a server that is stopped and started again (the PostgreSQL outage):
    below the kernel's ephemeral range, which `free_port` and every outgoing connection
    draw from, so no connection takes it while the server is down; chosen at random, so
    helpers running the cases side by side do not pick the same one."""
    import random
    import socket

    low = 32768
    with contextlib.suppress(OSError, ValueError):
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(max(1024, low - 12_000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port below {low} (the ephemeral range)")


@contextlib.contextmanager
def cpu_hogs(n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """N CPU-bound processes (``while 1: pass``) for as long as the block runs: a slower
    machine, where a test found mentions lost. Each is killed and waited for on the way
    out, however the block ends (a failure, Ctrl-C), so none is left running."""
    if n < 0:
        raise ValueError(f"cpu_hogs needs a number of processes, 0 or more, not {n}")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen([sys.executable, "-c", "while 1: pass"],
                                          stdin=subprocess.DEVNULL))
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
