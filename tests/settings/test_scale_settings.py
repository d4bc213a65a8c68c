"""Scale-out settings (issue 14): Discord shards and the Slack HTTP mode, from the
environment, kuuki.toml and `kuuki run` flags, with errors naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from kuuki.errors import ConfigError
from kuuki.platforms.tokens import platforms_to_run
from kuuki.settings import describe, load_settings


def test_shards_from_the_environment_and_from_kuuki_toml(tmp_path: Path) -> None:
    s = load_settings(env={"KUUKI_DISCORD_SHARD_COUNT": "4", "KUUKI_DISCORD_SHARD_IDS": "2, 3"})
    assert (s.discord_shard_count, s.discord_shard_ids) == (4, (2, 3))
    cfg = tmp_path / "kuuki.toml"
    cfg.write_text("[discord]\nshard_count = 2\nshard_ids = [1]\n", encoding="utf-8")
    s = load_settings(env={}, path=cfg)
    assert (s.discord_shard_count, s.discord_shard_ids) == (2, (1,))
    assert load_settings(env={}).discord_shard_count == 0  # discord.py asks Discord


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"KUUKI_DISCORD_SHARD_IDS": "0"},
         "setting KUUKI_DISCORD_SHARD_IDS (from the environment): shard ids need the total "
         "number of shards: set KUUKI_DISCORD_SHARD_COUNT too"),
        ({"KUUKI_DISCORD_SHARD_COUNT": "2", "KUUKI_DISCORD_SHARD_IDS": "0,2"},
         "setting KUUKI_DISCORD_SHARD_IDS (from the environment): shard 2 does not exist: "
         "with 2 shards the ids are 0 to 1"),
        ({"KUUKI_DISCORD_SHARD_COUNT": "2", "KUUKI_DISCORD_SHARD_IDS": "1,1"},
         "setting KUUKI_DISCORD_SHARD_IDS (from the environment): 1 is listed twice"),
        ({"KUUKI_DISCORD_SHARD_COUNT": "2", "KUUKI_DISCORD_SHARD_IDS": "zero"},
         "expected a list of whole numbers such as [0, 1], got 'zero'"),
        ({"KUUKI_DISCORD_SHARD_COUNT": "-1"}, "expected a whole number from 0 to 65536"),
        ({"KUUKI_SLACK_MODE": "webhook"},
         "setting KUUKI_SLACK_MODE (from the environment): expected one of socket, http"),
        ({"KUUKI_SLACK_MODE": "http", "SLACK_BOT_TOKEN": "xoxb-1234-5678-abcdefgh"},
         "setting SLACK_SIGNING_SECRET: the HTTP Events API mode needs the app's signing "
         "secret"),
        ({"KUUKI_SLACK_PORT": "70000"}, "setting KUUKI_SLACK_PORT (from the environment)"),
    ],
)
def test_wrong_scale_settings_name_the_setting(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    assert message in str(info.value)


def test_the_http_mode_needs_no_app_token_and_hides_the_secret() -> None:
    env = {"KUUKI_SLACK_MODE": "http", "SLACK_BOT_TOKEN": "xoxb-1234-5678-abcdefgh",
           "SLACK_SIGNING_SECRET": "s3cr3t-signing"}
    s = load_settings(env=env)
    assert platforms_to_run(s) == ["slack"]
    assert describe(s)["slack_signing_secret"] == "***"
    assert "s3cr3t" not in repr(s)
    socket = load_settings(env={"SLACK_BOT_TOKEN": "xoxb-1234-5678-abcdefgh"})
    with pytest.raises(ConfigError, match=r'or set slack\.mode = "http"'):
        platforms_to_run(socket)


def test_kuuki_run_flags_reach_the_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kuuki import cli, run

    seen = []

    async def fake_run(settings: object, **options: object) -> int:
        assert options == {"dashboard": None}  # no --dashboard: no operator server
        seen.append(settings)
        return 0

    monkeypatch.setattr(run, "run_platforms", fake_run)
    monkeypatch.delenv("KUUKI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["run", "--shard-count", "3", "--shard-ids", "0,2", "--slack-mode", "http",
                     "--host", "127.0.0.1", "--port", "8123"])
    assert code == 0
    [s] = seen
    assert (s.discord_shard_count, s.discord_shard_ids) == (3, (0, 2))  # type: ignore[attr-defined]
    assert (s.slack_mode, s.slack_http_host, s.slack_http_port) == (  # type: ignore[attr-defined]
        "http", "127.0.0.1", 8123)
