"""The default path end to end: a mention answered by the shipped SmolLM2 through llama.cpp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kuuki.cli import main


def test_replay_with_the_embedded_model_replies_with_generated_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mention.jsonl"
    path.write_text(
        "\n".join(
            [
                '{"setup": {"bot": "Kuu", "language": "en"}}',
                '{"id": "m1", "t": 0, "channel": "general", "user": "alice", "text": "morning all"}',
                '{"id": "m2", "t": 20, "channel": "general", "user": "bob", "text": "Kuu, say hello to everyone!", "mentions": ["Kuu"]}',
            ]
        ),
        encoding="utf-8",
    )
    assert main(["replay", str(path), "--llm", "embedded"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    reply = next(line for line in lines if line["after"] == "m2")
    assert reply["action"] == "reply" and reply["stage"] == "addressed"
    assert isinstance(reply["text"], str) and reply["text"].strip()
    assert reply["llm_calls"] == 1
