"""When a run's unfinished requests make it overloaded — the one rule every verdict
applies (docs/trace.md, "Verdicts"): `size validate`, `live validate` and the twin's
capacity search (a run that serves all), the profiling tests and a ramp's steps (past
capacity), and the summary that `simulate`, `load` and `live run` print.

A request sent after the warm-up and still unanswered at the end of the run
(`requests.unfinished`) is not served, and in a run that keeps up it is rare: in a
steady state, by Little's law, the requests in the system at the end are the arrival
rate times the mean response time W, and those sent are the arrival rate times the
measured seconds T, so the unfinished share is about W / T — 0.3% for W = 0.1 s over
T = 30 s. A backlog that grew through the run leaves far more: the issue's run at 500
sessions/s left 3,459 of 4,077 requests unfinished (85%). Past `UNFINISHED_SHARE` of
those sent, a run is overloaded: its server did not keep up with what it was sent.
A run whose response times are a sizeable part of its length (W > T / 100) is then
judged overloaded though it keeps up; measure it longer."""

from __future__ import annotations

from .schema import StatusCounts, Summary, sent

UNFINISHED_SHARE = 0.01


def unfinished_share(counts: StatusCounts) -> float:
    """Unfinished requests over those sent after the warm-up (0 if none was sent)."""
    n = sent(counts)
    return counts["unfinished"] / n if n else 0.0


def backlogged(counts: StatusCounts) -> bool:
    """More than `UNFINISHED_SHARE` of the requests sent were unanswered at the end:
    the run is past capacity, whatever the finished ones say."""
    return unfinished_share(counts) > UNFINISHED_SHARE


def backlog_note(summary: Summary) -> str | None:
    """What a verdict says of a backlogged run (None if it is not) — and, when the run
    is too short for the rule to tell a backlog from the requests a run that keeps up
    has in flight (its mean response time W beyond `UNFINISHED_SHARE` of its measured
    seconds T), that it cannot tell."""
    counts = summary["requests"]
    if not backlogged(counts):
        return None
    note = (
        f"{counts['unfinished']:,} of the {sent(counts):,} requests sent after the warm-up ({unfinished_share(counts):.1%}) "
        f"were unfinished at the end, more than {UNFINISHED_SHARE:.0%}: overloaded (the system did not keep up with what it was sent)"
    )
    rt, t = summary["response_time"], summary["measured_seconds"]
    w = rt["mean"] if rt else 0.0
    if w and t and w / t > UNFINISHED_SHARE:
        note += (
            f"; but the mean response time ({w:.3g} s) is {w / t:.1%} of the {t:.3g} s measured, so a run that keeps up leaves "
            f"about that share unfinished too: measure longer (≥ {w / UNFINISHED_SHARE:.3g} s) to tell"
        )
    return note
