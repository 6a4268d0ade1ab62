"""The revert guard in the simulator (docs/control.md, Safety): a thread pool whose waiters
give up after 0.2 s, under MMPP bursts, with Gradient2 on it. Where a step of the
gradient is followed by a rise of the error share by more than a point, the next decision
puts the sizes back and holds them; the shares its reason quotes are the intervals'
own, counted from the requests' records; and no request is lost on the way."""

from __future__ import annotations

import re

import pandas as pd
from control_models import GRADIENT, bursty

import tierlab

REVERTED = re.compile(r"errors (\d+\.\d)% → (\d+\.\d)% after threads (\d+) → (\d+): reverted to (\d+)$")
HOLD = 6  # control.revert.hold's default


def impatient(seed: int) -> dict:
    model = bursty(GRADIENT, seed=seed)
    model["tiers"]["app"]["pools"]["threads"]["timeout"] = 0.2
    return model


def share(r: pd.DataFrame, start: float, end: float) -> float:
    """Failed over finished, of the requests that finished in (start, end]."""
    done = r[(r.end > start) & (r.end <= end)]
    return float((done.status != "ok").mean())


def test_a_step_followed_by_rising_errors_is_reverted_and_held():
    trace = tierlab.simulate(impatient(5))
    d = pd.DataFrame(trace.summary["control"]["decisions"]).assign(threads=lambda d: d.sizes.str["threads"])
    reverts = [k for k, reason in enumerate(d.reason) if REVERTED.match(reason)]
    assert reverts, "the seed's bursts bring at least one revert"
    r = trace.requests
    for k in reverts:
        before, after, was, to, back = REVERTED.match(d.reason[k]).groups()  # type: ignore[union-attr]
        # The step it undoes is the decision before it, from the size the one before set.
        in_force = 40 if k < 2 else d.threads[k - 2]
        assert (int(was), int(to), int(back)) == (in_force, d.threads[k - 1], in_force)
        assert d.threads[k] == in_force
        # Its shares are those of the interval before the step and the one after it.
        t = d.t[k]
        assert float(after) == round(100 * share(r, t - 5, t), 1)
        assert float(before) == round(100 * share(r, t - 10, t - 5), 1)
        assert float(after) > float(before) + 1
        # Then held, whatever the gradient would do.
        held = d.iloc[k + 1 : k + 1 + HOLD]
        assert (held.threads == in_force).all() and held.reason.str.contains("held after a revert").all()
    s = trace.summary["requests"]
    assert s["rejected"] > 0 and len(trace.requests) == s["ok"] + s["rejected"] + s["timeout"] + s["error"]
