"""Fakes that behave, for tests only: a scripted LLM, a virtual clock, a recording outbox.

Nothing in the product path imports this package.
"""

from __future__ import annotations

from ..clock import VirtualClock
from ..platforms.replay import RecordingOutbox

__all__ = ["RecordingOutbox", "VirtualClock"]
