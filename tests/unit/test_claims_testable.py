"""The ledger's `not testable here` verdict: a claim whose data cannot decide it is not
scored, whatever its own criterion says (a flat series would pass "M0 among the best")."""

from __future__ import annotations

import json

from tierlab.experiments.study import claims
from tierlab.experiments.study.claims import Criterion, Ledger, spread_beyond

AMONG_BEST = Criterion("M0 among the measured best M", lambda ours, paper: ours["M0"] in ours["best"])
STEP = spread_beyond(0.05, " sessions/s", "one rate step")


def _best(measured: dict[int, float]) -> list[int]:
    return [m for m, v in measured.items() if v == max(measured.values())]


def test_a_flat_series_is_not_testable_however_the_claim_reads(tmp_path):
    flat = {8: 3.2, 9: 3.2, 10: 3.2, 11: 3.2}  # every M "among the best"
    ledger = Ledger()
    assert not ledger.check("best M", "M0 is the best", {"M0": 9, "best": _best(flat)}, AMONG_BEST, "a mechanism", testable=STEP, testable_data=flat)
    entry = ledger.claims[0]
    assert entry["verdict"] == "not testable here"
    assert "not testable here: the values span more than 0.05 sessions/s (one rate step) does not hold" == entry["note"]
    assert "testable where the values span more than 0.05" in entry["criterion"]
    ledger.write(tmp_path)
    assert claims.check_file(tmp_path / "claims.json")[0]["verdict"] == "not testable here"


def test_one_step_is_still_flat_and_more_is_testable_both_ways():
    ledger = Ledger()
    one_step = {8: 3.15, 9: 3.2}
    ledger.check("best M", "", {"M0": 9, "best": _best(one_step)}, AMONG_BEST, testable=STEP, testable_data=one_step)
    clear = {8: 3.0, 9: 3.2, 10: 3.1}
    assert ledger.check("best M", "", {"M0": 9, "best": _best(clear)}, AMONG_BEST, testable=STEP, testable_data=clear)
    ledger.check("best M", "", {"M0": 8, "best": _best(clear)}, AMONG_BEST, "why", testable=STEP, testable_data=clear)
    assert [c["verdict"] for c in ledger.claims] == ["not testable here", "reproduced", "not reproduced"]
    # A miss's mechanism is kept only on a testable miss.
    assert ledger.claims[2]["note"] == "why"


def test_testability_is_checked_on_ours_by_default_and_a_missing_figure_is_never_testable():
    ledger = Ledger()
    assert not STEP.holds({"a": 1.0, "b": None}, None)
    ledger.check("ordered", "", {"a": 3.0, "b": 3.0}, Criterion("a ≥ b", lambda ours, paper: ours["a"] >= ours["b"]), testable=STEP)
    assert ledger.claims[0]["verdict"] == "not testable here"


def test_check_file_knows_the_verdict(tmp_path):
    path = tmp_path / "claims.json"
    path.write_text(json.dumps([{"claim": "x", "paper": 1, "ours": 1, "criterion": "c", "verdict": "not testable here", "note": "why"}]))
    assert claims.check_file(path)[0]["verdict"] == "not testable here"
    assert claims.VERDICTS.index("not testable here") == 2  # the ledger's column order
