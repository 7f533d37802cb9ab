"""Conformance with the WHATWG URL Standard: web-platform-tests urltestdata.json."""

import json
from pathlib import Path

from lib.url.normalize import resolve

CASES = [
    case
    for case in json.loads((Path(__file__).parent / "data" / "urltestdata.json").read_text())
    if isinstance(case, dict)
]


def test_every_wpt_case_resolves_as_the_standard_says():
    failures = []
    for case in CASES:
        got = resolve(case["input"], case.get("base"))
        expected = None if case.get("failure") else case["href"]
        if got != expected:
            failures.append((case["input"], case.get("base"), expected, got))
    passed = len(CASES) - len(failures)
    print(f"WHATWG URL conformance: {passed}/{len(CASES)} cases pass")
    assert len(CASES) == 891
    assert failures == []
