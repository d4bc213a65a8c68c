"""What every command shares: the settings, read once at the edge."""

from __future__ import annotations

import argparse
from typing import Any

from kuuki.settings import Settings, load_settings


def settings_for(args: argparse.Namespace, overrides: dict[str, Any] | None = None) -> Settings:
    return load_settings(path=getattr(args, "config", None), overrides=overrides)
