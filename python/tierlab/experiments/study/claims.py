"""A paper's claims, scored against a study's results: results/<study>/claims.json beside
the study's script (studies/results, investigations/<topic>/results).

Each entry is `{claim, paper, ours, criterion, verdict}` and, where it says something,
`note`. The claim names the paper's figure, table or section; `paper` is the paper's
figure and `ours` the study's. The criterion is a `Criterion` the study defines as a
constant before it runs (tolerance, direction, strictness) and the verdict is computed
from it — never typed:

- `reproduced` / `not reproduced`: the criterion holds / does not hold for ours against
  the paper; a miss carries the mechanism the model lacks (`missing`).
- `not testable here`: the data cannot decide the claim — a criterion of testability,
  fixed before the run like the claim's own and checked first, does not hold (e.g. "M0
  is among the measured best" on a measured series flat within its noise, which any M0
  would pass); the note says which and why.
- `input`: the figure was calibrated into the model, so matching it predicts nothing; the
  note says what was calibrated and whether the calibration still holds.

The criteria are strict: a flat series does not decrease, a tie does not order."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VERDICTS = ("reproduced", "not reproduced", "not testable here", "input")
KEYS = ("claim", "paper", "ours", "criterion", "verdict")
OPTIONAL_KEYS = ("note",)


# ---- strict predicates --------------------------------------------------------------


def _values(xs: Iterable[float] | Mapping[Any, float]) -> list[float]:
    return list(xs.values()) if isinstance(xs, Mapping) else list(xs)


def strictly_decreasing(xs: Iterable[float] | Mapping[Any, float]) -> bool:
    """Every value below the one before it (in the order given): a tie is no decrease."""
    v = _values(xs)
    return len(v) >= 2 and all(_number(a) and _number(b) and b < a for a, b in zip(v, v[1:]))


def strictly_increasing(xs: Iterable[float] | Mapping[Any, float]) -> bool:
    v = _values(xs)
    return len(v) >= 2 and all(_number(a) and _number(b) and b > a for a, b in zip(v, v[1:]))


def within(ours: float | None, paper: float, rel: float | None = None, abs: float | None = None) -> bool:
    """|ours − paper| ≤ rel·|paper| (or ≤ abs); a missing figure is never within."""
    if not _number(ours):
        return False
    bound = rel * math.fabs(paper) if rel is not None else abs
    if bound is None:
        raise ValueError("within: give rel or abs")
    return math.fabs(ours - paper) <= bound  # type: ignore[operator]


def ranking(xs: Mapping[Any, float], descending: bool = True) -> list[Any] | None:
    """The keys from the highest value to the lowest, or None when two values tie (or one
    is missing): a tie orders nothing."""
    if not all(_number(v) for v in xs.values()) or len(set(xs.values())) < len(xs):
        return None
    return sorted(xs, key=lambda k: xs[k], reverse=descending)


def same_order(ours: Mapping[Any, float], paper: Mapping[Any, float]) -> bool:
    """The same keys in the same strict order of their values."""
    return set(ours) == set(paper) and ranking(paper) is not None and ranking(ours) == ranking(paper)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# ---- criteria: a predicate with the words that state it -----------------------------


@dataclass(frozen=True)
class Criterion:
    """What must hold for `ours` against `paper`, and how the ledger states it."""

    text: str
    holds: Callable[[Any, Any], bool]


def close(rel: float) -> Criterion:
    return Criterion(f"within ±{rel:.0%} of the paper", lambda ours, paper: within(ours, paper, rel=rel))


def close_abs(tolerance: float, unit: str = "") -> Criterion:
    return Criterion(f"within ±{tolerance:g}{unit} of the paper", lambda ours, paper: within(ours, paper, abs=tolerance))


def within_decades(decades: float) -> Criterion:
    """A ratio to within `decades` powers of ten of the paper's ("an order of magnitude")."""
    return Criterion(
        f"within {decades:g} decade of the paper's (×10^±{decades:g})",
        lambda ours, paper: _number(ours) and ours > 0 and math.fabs(math.log10(ours / paper)) <= decades,
    )


def decreasing() -> Criterion:
    return Criterion("strictly decreasing in the order listed (a tie is no decrease)", lambda ours, paper: strictly_decreasing(ours))


def increasing() -> Criterion:
    return Criterion("strictly increasing in the order listed (a tie is no increase)", lambda ours, paper: strictly_increasing(ours))


def equal() -> Criterion:
    return Criterion("the same as the paper's", lambda ours, paper: ours == paper)


def above(bound: float, unit: str = "") -> Criterion:
    return Criterion(f"above {bound:g}{unit}", lambda ours, paper: _number(ours) and ours > bound)


def below(bound: float, unit: str = "") -> Criterion:
    return Criterion(f"below {bound:g}{unit}", lambda ours, paper: _number(ours) and ours < bound)


def times_the_second(factor: float, why: str = "") -> Criterion:
    """The first of two values at least `factor` times the second ("much larger")."""

    def holds(ours: Mapping, paper: Any) -> bool:
        first, second = _values(ours)
        return _number(first) and _number(second) and first >= factor * second

    return Criterion(f"the first at least {factor:g}× the second{f' ({why})' if why else ''}", holds)


def each(inner: Criterion) -> Criterion:
    """`inner` for every entry of a mapping (against the paper's entry, or the paper's one figure)."""

    def holds(ours: Mapping, paper: Any) -> bool:
        return bool(ours) and all(inner.holds(v, paper[k] if isinstance(paper, Mapping) else paper) for k, v in ours.items())

    return Criterion(inner.text if inner.text.startswith("each: ") else f"each: {inner.text}", holds)


def apart(ours: Mapping[Any, float], margins: Mapping[Any, float]) -> bool:
    """Strictly decreasing in the order listed, each step larger than the two values' 95%
    confidence half-widths combined: a difference the seeds cannot tell from noise orders nothing."""
    keys = list(ours)
    return strictly_decreasing(ours) and all(ours[a] - ours[b] > math.hypot(margins.get(a, 0.0), margins.get(b, 0.0)) for a, b in zip(keys, keys[1:]))


def ordered_as_paper(margins: Mapping[Any, float] | None = None) -> Criterion:
    """The paper's strict order of its figures; with `margins` (95% half-widths of ours),
    each of our steps must also clear them."""
    if margins is None:
        return Criterion("the same strict order as the paper's (a tie orders nothing)", same_order)

    def holds(ours: Mapping, paper: Mapping) -> bool:
        order = ranking(paper)
        return same_order(ours, paper) and order is not None and apart({k: ours[k] for k in order}, margins)

    return Criterion("the same strict order as the paper's, each step beyond the combined 95% confidence half-widths", holds)


def spread_beyond(noise: float, unit: str = "", why: str = "") -> Criterion:
    """A testability criterion: the values (a mapping's or a list's) span more than
    `noise`, so that a claim about which is highest or how they order can fail."""

    def holds(ours: Any, paper: Any) -> bool:
        v = _values(ours)
        # (1 + 1e-9): rates on a grid of `noise` one step apart differ by it up to float error.
        return len(v) >= 2 and all(_number(x) for x in v) and max(v) - min(v) > noise * (1 + 1e-9)

    return Criterion(f"the values span more than {noise:g}{unit}{f' ({why})' if why else ''}", holds)


def decreasing_apart(margins: Mapping[Any, float]) -> Criterion:
    return Criterion(
        "strictly decreasing in the order listed, each step beyond the combined 95% confidence half-widths", lambda ours, paper: apart(ours, margins)
    )


# ---- the ledger ---------------------------------------------------------------------


class Ledger:
    """The claims a study scores, in the order it scores them."""

    def __init__(self) -> None:
        self.claims: list[dict] = []

    def check(
        self,
        claim: str,
        paper: Any,
        ours: Any,
        criterion: Criterion,
        missing: str | None = None,
        assumes: str | None = None,
        testable: Criterion | None = None,
        testable_data: Any = None,
    ) -> bool:
        """Score a prediction on the figures as computed (the ledger shows them rounded);
        `missing` is the mechanism the model lacks, kept only on a miss; `assumes` is
        what the prediction rests on that the paper does not give, kept always.
        `testable`: checked first, on `testable_data` (default `ours`); where it does not
        hold the verdict is `not testable here` (returned as False: not reproduced)."""
        untestable = testable is not None and not testable.holds(ours if testable_data is None else testable_data, paper)
        ok = not untestable and bool(criterion.holds(ours, paper))
        entry = {
            "claim": claim,
            "paper": rounded(paper),
            "ours": rounded(ours),
            "criterion": criterion.text + (f"; testable where {testable.text}" if testable else ""),
            "verdict": "not testable here" if untestable else "reproduced" if ok else "not reproduced",
        }
        note = [f"not testable here: {testable.text} does not hold"] if untestable and testable else []
        note += [missing] if not untestable and not ok and missing else []
        if assumes:
            note.append(assumes)
        if note:
            entry["note"] = "; ".join(note)
        self.claims.append(entry)
        return ok

    def input(self, claim: str, paper: Any, ours: Any, criterion: Criterion, calibrated: str) -> None:
        """A figure calibrated into the model: not a prediction. The note says what was
        calibrated and whether ours still meets the criterion."""
        holds = "holds" if criterion.holds(ours, paper) else "no longer holds"
        note = f"{calibrated}; the calibration {holds} ({criterion.text})"
        self.claims.append({"claim": claim, "paper": rounded(paper), "ours": rounded(ours), "criterion": criterion.text, "verdict": "input", "note": note})

    def write(self, out: Path) -> None:
        (out / "claims.json").write_text(json.dumps(self.claims, indent=2, ensure_ascii=False, default=_plain) + "\n")
        counts = {v: sum(c["verdict"] == v for c in self.claims) for v in VERDICTS}
        print("claims: " + ", ".join(f"{n} {v}" for v, n in counts.items()))


def _plain(x: Any) -> Any:
    """numpy scalars and the like as plain JSON."""
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"claims.json: cannot write {type(x).__name__}")


def rounded(x: Any, digits: int = 4) -> Any:
    """Figures as the ledger shows them: floats to `digits` significant digits, recursively."""
    if isinstance(x, Mapping):
        return {(k.item() if hasattr(k, "item") else k): rounded(v, digits) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [rounded(v, digits) for v in x]
    if hasattr(x, "item"):
        x = x.item()
    if isinstance(x, float) and math.isfinite(x) and x != 0:
        return round(x, max(0, digits - 1 - int(math.floor(math.log10(math.fabs(x))))))
    return x


def check_file(path: Path) -> list[dict]:
    """A claims.json's entries, each with exactly the keys and a known verdict; ValueError otherwise."""
    claims = json.loads(path.read_text())
    if not isinstance(claims, list) or not claims:
        raise ValueError(f"{path}: expected a non-empty list of claims")
    for i, c in enumerate(claims):
        extra = set(c) - set(KEYS) - set(OPTIONAL_KEYS)
        if missing := [k for k in KEYS if k not in c]:
            raise ValueError(f"{path}[{i}]: missing {', '.join(missing)}")
        if extra:
            raise ValueError(f"{path}[{i}]: unknown keys {', '.join(sorted(extra))}")
        if c["verdict"] not in VERDICTS:
            raise ValueError(f"{path}[{i}]: verdict {c['verdict']!r}; use one of {', '.join(VERDICTS)}")
    return claims
