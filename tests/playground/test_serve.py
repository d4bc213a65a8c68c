"""`serve_playground`: the real server with the embedded defaults (LLM off)."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import httpx
import pytest

from kuuki.errors import KuukiError
from kuuki.platforms.playground import running_server, serve_playground
from kuuki.settings import load_settings


async def test_serve_playground_prints_its_url_and_serves_the_page(
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = load_settings(env={"KUUKI_LLM": "none"})
    ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve_playground(settings, port=0, ready=ready.set_result))
    try:
        port = await asyncio.wait_for(ready, timeout=120)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            page = await client.get("/")
            state = (await client.get("/api/state")).json()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert page.status_code == 200 and "kuuki playground" in page.text
    assert state["persona"]["name"] == "Kuu"
    assert state["llm"] is None  # --llm none: the pipeline runs, generation is off
    assert f"kuuki playground: http://127.0.0.1:{port}/" in capsys.readouterr().out


async def test_a_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]

        async def app(scope: object, receive: object, send: object) -> None:
            raise AssertionError("never served")

        with pytest.raises(KuukiError, match=f"cannot listen on 127.0.0.1:{port}"):
            async with running_server(app, port=port):
                pass
