"""A real OpenAI-compatible server for tests: llama-cpp-python's, on 127.0.0.1.

`llama_server()` starts llama_cpp.server, with kuuki's llama.cpp work-arounds applied,
in a subprocess on a free port, waits until ``/v1/models`` answers, yields a
`LlamaServer` and stops the process afterwards. Needs ``llama-cpp-python[server]``.
A session-scoped pytest fixture is a three-liner::

    @pytest.fixture(scope="session")
    def llama_server_url():
        with llama_server() as server:
            yield server.base_url
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from kuuki.llm.embedded import shipped_model_path

MODEL_ALIAS = "smollm2"


@dataclass(frozen=True, slots=True)
class LlamaServer:
    base_url: str  # ends in /v1, as OpenAI clients expect
    model: str
    process: subprocess.Popen[bytes]


def free_port() -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def llama_server(
    model_path: Path | None = None,
    *,
    n_ctx: int = 2048,
    startup_timeout_s: float = 120.0,
    chat_format: str | None = None,
) -> Iterator[LlamaServer]:
    """Run llama-cpp-python's OpenAI-compatible server for the duration of the block.

    ``chat_format`` picks the server's chat handler; ``"chatml-function-calling"`` is the
    one that understands ``tools`` for a ChatML model such as SmolLM2.
    """
    port = free_port()
    command = [
        sys.executable,
        "-c",
        _SERVE,
        "--model",
        str(model_path or shipped_model_path()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        "2",
        "--verbose",
        "False",
    ]
    if chat_format is not None:
        command += ["--chat_format", chat_format]
    # Passive OpenMP waiting: see kuuki.llm.embedded (spinning threads starve each other).
    env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ, "PYTHONPATH": _pythonpath()}
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            base_url = f"http://127.0.0.1:{port}/v1"
            _wait_until_ready(base_url, process, log, startup_timeout_s)
            yield LlamaServer(base_url, MODEL_ALIAS, process)
        finally:
            _stop(process)


def _pythonpath() -> str:
    # The child must import this very kuuki, whether installed or run from a checkout.
    src = str(Path(__file__).resolve().parents[2])
    rest = os.environ.get("PYTHONPATH")
    return f"{src}{os.pathsep}{rest}" if rest else src


def _wait_until_ready(
    base_url: str, process: subprocess.Popen[bytes], log: IO[bytes], timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama server exited with {process.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        # Polling, not a fixed wait: the loop ends as soon as the server answers.
        time.sleep(0.2)
    raise RuntimeError(f"llama server did not answer within {timeout_s}s:\n{_tail(log)}")


def _tail(log: IO[bytes], limit: int = 4000) -> str:
    log.seek(0)
    text: str = log.read().decode(errors="replace")
    return text[-limit:]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# The subprocess's program: llama_cpp.server's own main, with the work-around active.
_SERVE = (
    "from kuuki.llm.llama_compat import no_extra_buffer_types\n"
    "from llama_cpp.server.__main__ import main\n"
    "with no_extra_buffer_types():\n"
    "    main()\n"
)
