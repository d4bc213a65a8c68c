"""A gateway or a worker in its own OS process, for the scale-out tests and `kuuki bench
scale`: ``python -m kuuki.testing.scale_process gateway|worker …``.

The product path unchanged (`run_gateway`, `run_worker`: settings from the environment as
`kuuki gateway` / `kuuki worker` read them), pointed at the local Discord and Slack by URL,
and for a worker the deterministic `tagged_llm` (kuuki.testing.bot_process: an addressed
message ``… #tag`` is answered ``Noted #tag.``, so a test counts the answers each got).
``ready`` is printed on stdout once it runs. SIGTERM stops it cleanly; SIGKILL is the
crash a test is after.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from kuuki.clock import RealClock
from kuuki.domain import User
from kuuki.replay.runner import RecordingOutbox
from kuuki.settings import load_settings
from kuuki.testing.bot_process import run_process, tagged_llm


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m kuuki.testing.scale_process")
    p.add_argument("role", choices=("gateway", "worker"))
    p.add_argument("--discord-api", help="the local Discord's API base URL")
    p.add_argument("--slack-api", help="the local Slack's Web API URL")
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--of", type=int, default=1)
    p.add_argument("--standby", type=float, default=2.0)
    p.add_argument("--llm", choices=("tagged", "none"), default="tagged",
                   help="the worker's model: tagged_llm, or none (rules only, no replies)")
    return p


async def _serve(args: argparse.Namespace) -> int:
    from kuuki.scale.run import run_gateway, run_worker

    if args.discord_api:
        import discord.http

        discord.http.Route.BASE = args.discord_api
    settings = load_settings()

    def ready() -> None:
        print("ready", flush=True)

    if args.role == "gateway":
        return await run_gateway(settings, slack_api=args.slack_api, ready=ready)
    outboxes = {}
    if args.llm == "tagged":
        llm = tagged_llm()
        build = {"llm": llm, "judge_llm": llm, "embedder": None}
    else:  # the product's worker with its model off: embeddings and all (bench scale)
        build = {"llm": None, "judge_llm": None}
        # the bench's synthetic chat is on the "local" platform: its answers are kept
        # here, as `kuuki bench ingest` keeps them, instead of failing their events
        outboxes = {"local": RecordingOutbox(RealClock(), User("Kuu", "Kuu", is_bot=True),
                                             keep=False)}
    return await run_worker(settings, index=args.index, count=args.of, standby_s=args.standby,
                            slack_api=args.slack_api, build=build, ready=ready,
                            outboxes=outboxes)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("kuuki").setLevel(logging.INFO)  # takeovers, catch-ups: the test log
    logging.getLogger("discord").setLevel(logging.INFO)

    return run_process(lambda: _serve(args))


if __name__ == "__main__":
    sys.exit(main())
