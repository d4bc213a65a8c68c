"""Where a hand rule and the addressee model disagree, the rule wins only where every user
expects it, and the trace shows both (the rule, the model's p, which one held)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.decide.test_scenarios import SCENARIOS, run_timeline

from kuuki.domain import ActionKind, Decision


@pytest.mark.parametrize("name", ["en35_name_then_dash_is_a_call",
                                  "ja33_name_then_dash_is_a_call"])
async def test_a_name_used_as_a_call_is_the_model_s_a_reference_the_rule_s(
    name: str, tmp_path: Path,
) -> None:
    timeline = await run_timeline(SCENARIOS / f"{name}.jsonl", tmp_path)
    by_id: dict[str, Decision] = {}
    for kind, value in timeline.entries:
        if kind == "decision":
            by_id.setdefault(value.message_id, value)
    call, reference = by_id["m2"], by_id["m3"]
    assert call.action.kind in (ActionKind.REPLY, ActionKind.ACK)
    first = call.trace.features["rule_vs_model"][0]
    assert first["rule"] == "names the bot: about it"
    assert first["held"] == "model" and first["model_p"] >= 0.65
    assert reference.action.kind is ActionKind.NONE
    assert reference.trace.features["rule_vs_model"] == [
        {"rule": "names the bot: about it", "model_p": reference.trace.features[
            "addressee"]["bot"], "seat_p": reference.trace.features["seat"]["p"],
         "held": "rule"}]
    assert any("holds over the addressee model" in s for s in reference.trace.steps)
