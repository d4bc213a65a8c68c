"""The web playground: a chat room in the browser with the engine's reasoning beside it.

`serve_playground` runs it (``kuuki playground``); `create_app` gives the ASGI app for
tests, with the LLM, judge, store and memory panel injectable.
"""

from __future__ import annotations

from kuuki.platforms.asgi_server import running_server
from kuuki.platforms.playground.memory import MemorySnapshot
from kuuki.platforms.playground.serve import serve_playground
from kuuki.platforms.playground.server import create_app
from kuuki.platforms.playground.session import Playground

__all__ = [
    "MemorySnapshot",
    "Playground",
    "create_app",
    "running_server",
    "serve_playground",
]
