"""`kuuki doctor`: what is wrong with a set-up, checked in the order `kuuki run` meets it.

The settings (loaded as `kuuki run` loads them), the tokens' shapes, a live login per
configured platform, the store, the channel policies (their channels seen?), the broker
when set, and the model; each a line, each problem with its fix. Exit 0 only when every
check passed, 1 otherwise (2: usage errors, from argparse). Checks run one after another:
a later one often needs an earlier one (no platform login without a token of the right
shape).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TextIO

from kuuki.cli.common import settings_for
from kuuki.cli.doctor.platforms import check_discord, check_platforms, check_slack
from kuuki.cli.doctor.policies import check_policies
from kuuki.cli.doctor.report import (
    Endpoints,
    Result,
    can_write_unicode,
    exit_code,
    failed,
    render,
    render_json,
)
from kuuki.cli.doctor.services import check_broker, check_model, check_store, probe_local
from kuuki.errors import ConfigError
from kuuki.settings import Settings

__all__ = ["Endpoints", "Result", "cmd_doctor", "diagnose", "run_doctor"]


def cmd_doctor(args: argparse.Namespace) -> int:
    try:
        settings: Settings | ConfigError = settings_for(args)
    except ConfigError as exc:
        settings = exc
    return run_doctor(settings, sys.stdout, as_json=args.json)


def run_doctor(
    settings: Settings | ConfigError,
    out: TextIO,
    *,
    as_json: bool = False,
    endpoints: Endpoints | None = None,
    unicode: bool | None = None,
) -> int:
    """Check ``settings`` (or report the error loading them), print the results on ``out``
    and return the exit code."""
    results = asyncio.run(diagnose(settings, endpoints or Endpoints()))
    if as_json:
        render_json(results, out)
    else:
        render(results, out, unicode=can_write_unicode(out) if unicode is None else unicode)
    return exit_code(results)


async def diagnose(settings: Settings | ConfigError, ep: Endpoints) -> list[Result]:
    if isinstance(settings, ConfigError):
        return [failed("settings", str(settings))]
    results = [Result("settings", True, "loaded" + _sources(settings))]
    platform_results, names = await check_platforms(settings, ep)
    results += platform_results
    if "discord" in names:
        results += await check_discord(settings, ep)
    if "slack" in names:
        results += await check_slack(settings, ep)
    results.append(await check_store(settings))
    policies = await check_policies(settings)
    if policies is not None:
        results.append(policies)
    broker = await check_broker(settings)
    if broker is not None:
        results.append(broker)
    results.append(await check_model("model", settings.llm))
    if settings.judge_llm is not None:
        results.append(await check_model("judge model", settings.judge_llm))
    elif settings.llm.backend == "embedded" and not settings.llm.model_path:
        results.append(await probe_local(ep))
    return results


def _sources(settings: Settings) -> str:
    where = sorted({src for _, src in settings.sources.values() if src})
    return f" ({', '.join(where)})" if where else " (defaults)"
