"""The pool-sizing method's λ between profiled points (Totok & Karamcheti, eq. 4-5): held
within the range of λ at the profiled neighbours, up to the measurement error of a
profiled λ, where interpolating λ_DB and λ_THR apart would make their minimum peak."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tierlab.experiments.sizing import PoolSetting, PoolSizing, ProfileGrid
from tierlab.experiments.sizing.method import LAMBDA_TOLERANCE

MS, NS = (5, 10, 20, 30), (1, 4, 10, 20, 30)


def _crossing(M: int, N: int) -> tuple[float, float]:
    """(p, q) of one request type: the connections bind at few connections (q/N, the
    database's inverse throughput, high), the threads at more (p grows with the
    connections busy beside it), as on the TPC-W example where λ(N) spiked to 4.85 at
    N = 5 between profiled 3.11 (N = 4) and 2.99 (N = 10)."""
    return 0.02 * M * N, N * 0.4 / (1 + 0.1 * N)


def _grid() -> ProfileGrid:
    rows = []
    for M in MS:
        for N in NS:
            if M >= N:
                p, q = _crossing(M, N)
                rows.append(
                    {"M": M, "N": N, "type": "A", "count": 100, "wait_thread": 0.0, "p": p, "wait_db": 0.0}
                    | {"q_active": q, "q_idle": 0.0, "q": q, "db_requests": 1.0, "response_time": p + q}
                )
    return ProfileGrid(pd.DataFrame(rows), pd.DataFrame(), pd.Series({"A": 1.0}), 1.0, PoolSetting("app", "t", "c"), "crossing")


def _profiled_lambda(N: int) -> float:
    """λ(N) over the profiled M only, by the paper's formulas (V = 1)."""
    return max(min(N / q, M / (p + q)) for M in MS if M >= N for p, q in [_crossing(M, N)])


def _between() -> list[tuple[int, int, int]]:
    """(N, the profiled N below, above) for every N between two profiled ones."""
    return [(N, lo, hi) for lo, hi in zip(NS, NS[1:]) for N in range(lo + 1, hi)]


def test_unbounded_lambda_of_N_overshoots_the_profiled_neighbours():
    """The premise: without the bound, min(λ_DB, λ_THR) peaks between N = 4 and 10,
    over 20% above both (so the next test can fail)."""
    by_n = PoolSizing(_grid(), tolerance=math.inf).rates().by_N().set_index("N")["lambda"]
    assert by_n.loc[8] > 1.2 * max(_profiled_lambda(4), _profiled_lambda(10))


def test_lambda_of_N_stays_within_the_profiled_neighbours_up_to_the_measurement_error():
    by_n = PoolSizing(_grid()).rates().by_N().set_index("N")["lambda"]
    for N, lo, hi in _between():
        top = max(_profiled_lambda(lo), _profiled_lambda(hi))
        bottom = min(_profiled_lambda(lo), _profiled_lambda(hi))
        assert by_n.loc[N] <= top * (1 + LAMBDA_TOLERANCE) + 1e-12, N
        assert by_n.loc[N] >= bottom * (1 - LAMBDA_TOLERANCE) - 1e-12, N


def test_every_lambda_stays_within_its_cells_corners():
    """Not only λ(N): λ at every (M, N) within the λ of its cell's profiled corners."""
    t = PoolSizing(_grid()).rates().table
    for M, N, lam in zip(t["M"], t["N"], t["lambda"]):
        Ma, Mb = max(m for m in MS if m <= M), min(m for m in MS if m >= M)
        Na, Nb = max(n for n in NS if n <= N), min(n for n in NS if n >= N)
        corners = [min(n / q, m / (p + q)) for m in (Ma, Mb) for n in (Na, Nb) if m >= n for p, q in [_crossing(m, n)]]
        assert min(corners) * (1 - LAMBDA_TOLERANCE) - 1e-12 <= lam <= max(corners) * (1 + LAMBDA_TOLERANCE) + 1e-12, (M, N)


def test_profiled_points_keep_their_lambda():
    t = PoolSizing(_grid()).rates().table.set_index(["M", "N"])
    for M in MS:
        for N in NS:
            if M >= N:
                p, q = _crossing(M, N)
                assert t.loc[(M, N), "lambda"] == pytest.approx(min(N / q, M / (p + q)), rel=1e-9)
                assert not t.loc[(M, N), "held"]


def test_held_marks_exactly_where_the_bound_acted():
    t = PoolSizing(_grid()).rates().table
    assert t["held"].any()
    free = np.minimum(t["lambda_db"], t["lambda_thr"])
    assert ((t["lambda"] != free) == t["held"]).all()
