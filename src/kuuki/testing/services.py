"""What a test does when a service it needs (PostgreSQL, RabbitMQ, chromium) is missing.

On a developer's machine it skips, saying why. Under ``CI=true`` it fails with the same
reason: ``.ci/run`` starts every service, so a missing one is a broken CI, not a test
that may quietly not run.
"""

from __future__ import annotations

import os
from typing import NoReturn


def in_ci() -> bool:
    """True when ``CI`` is set to a true value (``true``, ``1``, ``yes``)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def service_missing(service: str, why: str) -> NoReturn:
    """Skip the running test, or fail it under ``CI=true``; ``why`` names what is missing."""
    import pytest  # only tests call this; the product never imports pytest

    message = f"{service} not available: {why}"
    if in_ci():
        pytest.fail(f"{message} (CI=true: .ci/run starts {service}, so this is a failure)")
    pytest.skip(message)
