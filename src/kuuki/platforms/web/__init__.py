"""What kuuki's web pages share: the decision card's script and the common stylesheet,
served at ``/shared/`` by the playground and by the operator dashboard, so a decision
looks the same on both (kuuki.explain.card builds the card's data)."""

from pathlib import Path

SHARED = Path(__file__).parent / "static"
SHARED_URL = "/shared"
