"""Chen & Gorton's contention cost model on their own measurements: fit
C = a·x + b·x/y + c·y to the paper's Table 3 (Stockonline on Orbix and Oracle,
examples/chen_gorton_stockonline.csv) with tierlab.analysis.costfit, and score the
fitted parameters, the optimal thread counts y* = √(b·x/c) (their Table 4) and where
y* falls on the measured costs (their Fig. 4).

    python studies/cost_model.py       # instant: a least-squares fit, no simulation

Writes studies/results/cost_model/: fit.csv (measured and fitted cost per point),
result.json (also printed last) and claims.json: the paper's claims scored (tierlab.experiments.study.claims)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from tierlab.analysis.costfit import fit, read_table
from tierlab.experiments.study.claims import Criterion, Ledger, above, close, each, equal
from tierlab.experiments.study.provenance import output_dir, study_parser, write_result

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "examples" / "chen_gorton_stockonline.csv"
PAPER_PARAMETERS = {"a": 6.65, "b": 5.42, "c": 5.24}  # §4.3, ms
PAPER_OPTIMUM = {100: 10, 200: 14, 400: 20, 800: 29}  # Table 4
# Criteria, fixed before the run: the paper gives its parameters to three significant
# figures and not its fitting details: ±1%. "y* falls in the area of the best
# performance" (Fig. 4): the measured cost at the measured thread count nearest y* (on
# the doubling grid) within 5% of that column's best. "Represents the pattern and
# trend": R² of at least 0.9.
PARAMETER = close(0.01)
BEST_AREA = 0.05
R2 = 0.9


def main() -> None:
    ap = study_parser(__doc__, quick=False)
    a = ap.parse_args()
    out = output_dir("cost_model", a)
    model = fit(read_table(TABLE))
    d = model.data.assign(fitted=model.cost(model.data.clients, model.data.threads))
    d.to_csv(out / "fit.csv", index=False)
    write_result(out, model.to_dict(), [])
    _claims(model, d).write(out)


def _claims(model, d: pd.DataFrame) -> Ledger:
    ledger = Ledger()
    ours = {"a": model.a, "b": model.b, "c": model.c}
    for p, v in PAPER_PARAMETERS.items():
        ledger.check(f"Fitted parameter {p}, ms (§4.3)", v, ours[p], PARAMETER, "not diagnosed: the paper does not say how it fitted")
    ledger.check(
        "Optimal server threads y* = √(b·x/c) per number of clients x (Table 4)",
        PAPER_OPTIMUM,
        {x: model.optimal_threads(x) for x in PAPER_OPTIMUM},
        each(equal()),
    )
    near = {}
    for x, g in d.groupby("clients"):
        g = g.set_index("threads").value
        y_star = model.optimal_threads(x)
        nearest = min(g.index, key=lambda y: abs(math.log2(y / y_star)))
        near[int(x)] = float(g[nearest] / g.min() - 1)
    ledger.check(
        "y* falls where the measured cost is lowest (§4.4, Fig. 4): measured cost at the grid thread count nearest y*, above the column's best",
        f"within {BEST_AREA:.0%} of the best",
        near,
        each(Criterion(f"at most {BEST_AREA:.0%} above the best", lambda ours, paper: ours <= BEST_AREA)),
    )
    ledger.check("The model 'represents the pattern and trend' of the measured costs (§4.3, Fig. 4): R²", "represents the trend", model.r2, above(R2))
    return ledger


if __name__ == "__main__":
    main()
