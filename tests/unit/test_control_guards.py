"""The guards' settings as options (docs/control.md, Safety): the revert's margin and hold
(`control.revert`) and a minimum dwell (`control.dwell`) in the model, checked where they
are given; their defaults are the guards as they were (the same run to the byte)."""

from __future__ import annotations

import pandas as pd
import pytest
from control_models import GRADIENT, bursty

import tierlab
from tierlab.errors import InputError, ModelError
from tierlab.experiments.control import guard_options


def decisions(model: dict) -> pd.DataFrame:
    trace = tierlab.simulate(model)
    return pd.DataFrame(trace.summary["control"]["decisions"]).assign(threads=lambda d: d.sizes.str["threads"])


def impatient(control: dict) -> dict:
    """test_control_revert.py's model: waiters give up after 0.2 s, so the gradient's
    shrinking steps are followed, some, by errors rising (seed 5: reverts)."""
    model = bursty(GRADIENT | control, seed=5)
    model["tiers"]["app"]["pools"]["threads"]["timeout"] = 0.2
    return model


def test_the_defaults_are_the_guards_as_they_were():
    given = tierlab.simulate(impatient({"revert": {"margin": 0.01, "hold": 6}, "dwell": 0}))
    default = tierlab.simulate(impatient({}))
    assert given.summary == default.summary
    pd.testing.assert_frame_equal(given.requests, default.requests)


def test_the_revert_margin_and_hold_are_the_model_s():
    held = decisions(impatient({"revert": {"hold": 2}}))
    # The reverts with three decisions after them (one may come at the run's end).
    reverts = [k for k in held.index[held.reason.str.contains(": reverted to ")] if k + 3 < len(held)]
    assert len(reverts) > 0
    for k in reverts:
        after = held.reason[k + 1 : k + 4].tolist()
        assert [r.split(";")[0] for r in after[:2]] == [f"threads {held.threads[k]} held after a revert ({n} more intervals)" for n in (1, 0)], after
        assert "held after a revert" not in after[2], after
    # A margin of the whole share: no rise of the errors can pass it.
    assert not decisions(impatient({"revert": {"margin": 1.0}})).reason.str.contains("reverted").any()


def test_a_change_stands_for_the_dwell():
    d = decisions(bursty(GRADIENT | {"dwell": 3}))
    changes = d.index[d.changed]
    assert len(changes) > 1
    for k in changes:
        after = d.iloc[k + 1 : k + 4]
        assert not after.changed.any() and (after.threads == d.threads[k]).all()
        assert after.reason.str.contains(r"stands after a change \(dwell 3: [210] more intervals\)").all(), after.reason.tolist()
    # Without it the gradient changes sizes in consecutive intervals.
    free = decisions(bursty(GRADIENT))
    assert (free.changed & free.changed.shift(1, fill_value=False)).any()


@pytest.mark.parametrize(
    ("control", "field"),
    [
        ({"revert": {"margin": 1.5}}, "control.revert.margin"),
        ({"revert": {"margin": -0.1}}, "control.revert.margin"),
        ({"revert": {"hold": -1}}, "control.revert.hold"),
        ({"revert": {"after": 2}}, "control.revert.after"),
        ({"dwell": -1}, "control.dwell"),
        ({"dwell": 1.5}, "control.dwell"),
    ],
)
def test_a_bad_guard_setting_names_its_field(control: dict, field: str):
    with pytest.raises(ModelError) as e:
        tierlab.load_model(bursty(GRADIENT | control)).engine()
    assert field in str(e.value), str(e.value)


@pytest.mark.parametrize(
    ("margin", "hold", "dwell", "option"),
    [(1.5, 6, 0, "--revert-margin"), (float("nan"), 6, 0, "--revert-margin"), (0.01, -1, 0, "--revert-hold"), (0.01, 6, -2, "--dwell")],
)
def test_tierlab_control_s_guard_options_are_checked_as_the_model_s(margin: float, hold: int, dwell: int, option: str):
    with pytest.raises(InputError, match=f"^{option}: "):
        guard_options(margin, hold, dwell)
    revert, steps = guard_options(0.02, 3, 4)
    assert (revert.margin, revert.hold, steps) == (0.02, 3, 4)
