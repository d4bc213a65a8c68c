"""What kuuki's web pages share: the decision card's script and the common stylesheet,
served at ``/shared/`` by the playground and by the operator dashboard, so a decision
looks the same on both (kuuki.explain.card builds the card's data)."""

import json
from pathlib import Path
from typing import Any

SHARED = Path(__file__).parent / "static"
SHARED_URL = "/shared"


def jsonable(value: Any) -> Any:
    """A page's payload as plain JSON values (datetimes and the like as text)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))
