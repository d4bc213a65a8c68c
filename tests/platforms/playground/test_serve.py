"""`serve_playground`: the real server with the embedded defaults (LLM off)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket

import httpx
import pytest

from kuuki.errors import KuukiError
from kuuki.platforms.playground import running_server, serve_playground
from kuuki.platforms.playground.model_status import PLUG_IN
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


@pytest.mark.slow
async def test_the_shipped_model_loads_at_start_up_and_is_named_for_what_it_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from websockets.asyncio.client import connect

    settings = load_settings(env={})  # the defaults: SmolLM2-135M through llama.cpp
    ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve_playground(settings, port=0, ready=ready.set_result))
    try:
        port = await asyncio.wait_for(ready, timeout=120)
        async with connect(f"ws://127.0.0.1:{port}/ws") as ws:
            model = json.loads(await ws.recv())["model"]
            while model["state"] == "loading":
                msg = json.loads(await ws.recv())
                if msg["type"] == "model":
                    model = msg
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert model["state"] == "ready", model
    assert (model["name"], model["shipped"], model["local"]) == (
        "SmolLM2-135M-Instruct", True, True)
    assert "tiny built-in model" in model["note"]["text"]
    assert [p["line"] for p in model["note"]["plug_in"]] == [line for _, line in PLUG_IN]
    # The address first: while llama.cpp loads a model, what the process prints is lost.
    assert capsys.readouterr().out.splitlines() == [
        f"kuuki playground: http://127.0.0.1:{port}/",
        "kuuki playground: loading the model SmolLM2-135M-Instruct…",
        f"kuuki playground: model SmolLM2-135M-Instruct ready in {model['load_s']:.1f} s",
    ]


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
