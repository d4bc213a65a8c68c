"""Re-check timers rebuilt by a channel's new owner, and the scale-out commands' errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kuuki.app import build_app
from kuuki.cli import main
from kuuki.clock import VirtualClock
from kuuki.domain import (
    Action,
    Channel,
    Decision,
    DecisionTrace,
    Message,
    Stage,
    User,
)
from kuuki.errors import KuukiError
from kuuki.replay.runner import RecordingOutbox
from kuuki.scale.broker import connect
from kuuki.settings import Settings

CHANNEL = Channel("c1", "general")


async def test_a_new_owner_rebuilds_the_recheck_the_dead_worker_had_scheduled(
    tmp_path: Path,
) -> None:
    clock = VirtualClock()
    outbox = RecordingOutbox(clock, User("Kuu", "Kuu", is_bot=True))
    app = await build_app(Settings(), clock=clock, outbox=outbox, llm=None, judge_llm=None,
                          embedder=None, store=f"sqlite:///{tmp_path}/kuuki.sqlite3")
    try:
        store = app.store
        question = Message("m1", CHANNEL.id, User("u1", "alice"),
                           "does anyone know how to rotate the logs?", clock.now())
        await store.roster.upsert_channel(CHANNEL)
        await store.messages.add_message(question)
        # What the dead worker decided: silence, judge again in 120 s (its timer died).
        trace = DecisionTrace(question.id, CHANNEL.id, clock.now())
        trace.features["recheck_s"] = 120.0
        await store.messages.save_decision(Decision(
            question.id, CHANNEL.id, Action.none(CHANNEL.id, question.id), Stage.LOCAL,
            10.0, "waiting for an answer", clock.now(), trace,
        ))
        await clock.advance(30)
        assert await app.engine.recover_timers(CHANNEL) == 1
        assert await app.engine.recover_timers(CHANNEL) == 0, "not scheduled twice"
        await clock.advance(89)
        assert len(await store.browse.decisions_for(question.id)) == 1, "not before it is due"
        await clock.advance(2)
        await app.engine.idle()
        later = await store.browse.decisions_for(question.id)
        assert len(later) == 2, "judged again at the time the dead worker had set"
        assert later[1]["trace"]["steps"][0] == "re-judged after 120 s"
    finally:
        await app.close()


def test_worker_without_a_broker_names_the_setting(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", "MTA4NzY1NDMyMTA5ODc2NTQzMjE.GkUuKi.a-local-test-token-shape")
    assert main(["worker"]) == 2
    assert "setting KUUKI_BROKER_URL" in capsys.readouterr().err


def test_an_unreachable_broker_is_one_line_with_the_password_masked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUUKI_BROKER_URL", "amqp://kuuki:hunter2@127.0.0.1:1/")
    monkeypatch.setenv("DISCORD_TOKEN", "MTA4NzY1NDMyMTA5ODc2NTQzMjE.GkUuKi.a-local-test-token-shape")
    assert main(["gateway"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the broker at amqp://kuuki:***@127.0.0.1:1/ (KUUKI_BROKER_URL)" in err
    assert "hunter2" not in err


async def test_a_broker_error_that_quotes_the_url_is_shown_without_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import aio_pika

    url = "amqp://kuuki:hunter2-broker@mq.example:5672/"

    async def refuse(given: str, **_: object) -> None:
        raise ConnectionError(f"cannot connect to {given} (credentials kuuki:hunter2-broker)")

    monkeypatch.setattr(aio_pika, "connect", refuse)
    with pytest.raises(KuukiError) as caught:
        await connect(url, robust=False)
    said = str(caught.value)
    assert "hunter2-broker" not in said
    assert said.startswith("cannot reach the broker at amqp://kuuki:***@mq.example:5672/ ")


def test_several_workers_need_postgresql(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KUUKI_BROKER_URL", "amqp://kuuki:kuuki@127.0.0.1:5672/")
    monkeypatch.setenv("KUUKI_STORE_URL", f"sqlite:///{tmp_path}/one.db")
    assert main(["run", "--workers", "2"]) == 2
    assert "setting KUUKI_STORE_URL" in capsys.readouterr().err
