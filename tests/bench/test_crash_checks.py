"""The crash scenario's checks (kuuki.bench.crash) are raised, not asserted: under
``python -O`` a bare ``assert`` is gone, and the crash test and ``kuuki bench crash``
would pass whatever the bot lost (issue 24)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# Run under -O: each case is an CrashOutcome that breaks one check, and what verify() raised.
PROBE = textwrap.dedent('''
    import json
    from collections import Counter
    from dataclasses import replace
    from kuuki.bench.crash import CrashCheckFailed, CrashOutcome, verify

    good = CrashOutcome(
        said=["m1", "m2", "m3"], addressed={"#q1": "m2"}, taken={"m1", "m2", "m3"},
        stored={"m1", "m2", "m3"}, replies=Counter({"#q1": 1}),
        decisions={"m1": 0, "m2": 1, "m3": 0}, pending=0,
        reports=[{"kill at": 2, "not taken at the kill": 1, "pending in the inbox": 0}],
    )
    cases = {
        "good": good,
        "never stored": replace(good, stored={"m1", "m2"}, taken={"m1", "m2"}),
        "taken, not stored": replace(good, stored={"m1", "m2"}),
        "answered twice": replace(good, replies=Counter({"#q1": 2})),
        "not answered": replace(good, replies=Counter()),
        "decided twice": replace(good, decisions={"m1": 2, "m2": 1, "m3": 0}),
        "not decided": replace(good, decisions={"m1": 0, "m2": 0, "m3": 0}),
        "left pending": replace(good, pending=3),
        "kill hit nothing": replace(
            good, reports=[{"kill at": 2, "not taken at the kill": 0,
                            "pending in the inbox": 0}]),
    }
    out = {"debug": __debug__}
    for name, outcome in cases.items():
        try:
            out[name] = ["held", verify(outcome)]
        except CrashCheckFailed as exc:
            out[name] = [type(exc).__name__, str(exc)]
    print(json.dumps(out))
''')


def test_every_check_raises_under_python_O() -> None:
    done = subprocess.run([sys.executable, "-O", "-c", PROBE], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out.pop("debug") is False  # asserts were stripped
    kind, counts = out.pop("good")
    assert kind == "held"
    assert counts["stored (of said)"] == counts["said"] == 3
    assert counts["mentions answered once"] == counts["addressed"] == 1
    assert counts["decided twice"] == counts["left in the inbox"] == 0
    expected = {
        "never stored": "said, never stored: ['m3']",
        "taken, not stored": "taken but not stored: ['m3']",
        "answered twice": "replies per tag: {'#q1': 2}",
        "not answered": "mentions with no reply: ['#q1']",
        "decided twice": "an event was decided twice: {'m1': 2}",
        "not decided": "mentions without exactly one decision: ['#q1']",
        "left pending": "3 events left in the inbox, never handled",
        "kill hit nothing": "no kill hit anything in flight",
    }
    assert {name: kind for name, (kind, _) in out.items()} == dict.fromkeys(
        expected, "CrashCheckFailed"
    )
    for name, fragment in expected.items():
        assert fragment in out[name][1], (name, out[name][1])
