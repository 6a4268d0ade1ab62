"""Issue 44, item 4: `sessions_created` and `session_migrations` mean the same in a
simulated and a live cluster trace (docs/trace.md): of the requests measured and
placed on a server of the tier, those whose session had no home there yet, and those
placed away from the home (the server of the session's previous request there) — on
every tier whose dispatcher reads homes, stateful or not. The simulator counts them in
the engine; a live trace from the proxies' decision lines (`live.decisions`). Here both
are held to the definition computed from the requests' servers alone. (The live
cluster run: tests/live/test_live_cluster.py.)"""

from __future__ import annotations

import pandas as pd

import tierlab
from tierlab.live.decisions import session_counts

from conftest import EXAMPLES


def _by_definition(placed: pd.DataFrame) -> dict[str, int]:
    """From each request's session, start and server only: the first of a session
    creates it, and one on another server than the session's previous migrates it."""
    ordered = placed.sort_values(["session", "start"], kind="stable")
    previous = ordered.groupby("session")["server"].shift()
    return {"sessions_created": int(previous.isna().sum()), "session_migrations": int((previous.notna() & (previous != ordered["server"])).sum())}


def _simulated(policy: str) -> tierlab.Trace:
    # Without a warm-up every request is measured, so the records hold each session's
    # first request; the live cluster's example, not stateful.
    return tierlab.simulate(
        tierlab.load_model(EXAMPLES / "tpcw_live_cluster.yaml").with_changes({"tiers.app.dispatch": {"policy": policy}}),
        duration=60,
        warmup=0,
        records=True,
    )


def test_the_simulator_counts_by_the_definition_on_a_tier_without_session_state():
    trace = _simulated("least_active")
    r, d = trace.requests, trace.summary["tiers"]["app"]["dispatch"]
    assert trace.summary["requests"]["rejected"] == 0
    expected = _by_definition(r.rename(columns={"app.server": "server"}))
    # The requests unfinished at the end were placed (counted) but have no record.
    unfinished = trace.summary["requests"]["unfinished"]
    assert 0 <= d["sessions_created"] - expected["sessions_created"] <= unfinished
    assert 0 <= d["session_migrations"] - expected["session_migrations"] <= unfinished
    assert expected["session_migrations"] > 0.2 * len(r)  # least active moves sessions often
    assert expected["sessions_created"] == r["session"].nunique()


def test_round_robin_and_affinity_by_the_definition():
    rr, aff = _simulated("round_robin"), _simulated("affinity")
    assert aff.summary["tiers"]["app"]["dispatch"]["session_migrations"] == 0
    assert rr.summary["tiers"]["app"]["dispatch"]["session_migrations"] > 0.3 * len(rr.requests)


def test_the_live_count_from_decision_lines_is_the_simulators():
    """The proxy's decision lines for the simulated run's requests (home: the server of
    the session's previous request; migrated: placed elsewhere), plus a line that
    reached no server and one of a request not measured: `session_counts` gives the
    simulator's own figures."""
    trace = _simulated("least_active")
    r = trace.requests.sort_values(["session", "start"], kind="stable")
    home = r.groupby("session")["app.server"].shift()
    lines = pd.DataFrame(
        {
            "request": r["id"],
            "session": r["session"],
            "server": r["app.server"].astype("Int64"),
            "home": home.astype("Int64"),
            "migrated": home.notna() & (home != r["app.server"]),
        }
    )
    refused = {"request": [10**9], "session": [1], "server": [pd.NA], "home": [pd.NA], "migrated": [False]}
    warmup = {"request": [10**9 + 1], "session": [2], "server": [0], "home": [pd.NA], "migrated": [False]}
    decisions = pd.concat([lines, pd.DataFrame(refused), pd.DataFrame(warmup)], ignore_index=True)
    counted = session_counts(decisions, [*r["id"], 10**9])  # the warm-up's request is not measured
    assert counted == _by_definition(r.rename(columns={"app.server": "server"}))
    d = trace.summary["tiers"]["app"]["dispatch"]
    unfinished = trace.summary["requests"]["unfinished"]
    assert 0 <= d["session_migrations"] - counted["session_migrations"] <= unfinished
