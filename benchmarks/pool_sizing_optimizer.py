"""The pool-sizing optimizer over every (M, N) with M ≥ N, M, N ≤ 200, for 14 request
types (target: under 1 s), against the straightforward peer: the same scipy
interpolants evaluated point by point in a Python loop over (M, N), as the paper's
step 3 describes ("iterate over this set").

    python benchmarks/pool_sizing_optimizer.py

Prints a table and, last, one JSON line; results/pool_sizing_optimizer.txt keeps a run."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd

from tierlab.experiments.sizing import PoolSetting, PoolSizing, ProfileGrid

TYPES = [f"T{i}" for i in range(14)]
GRID = [1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200]


def profile() -> ProfileGrid:
    rng = np.random.default_rng(1)
    rows = []
    for t in TYPES:
        base_p, base_q = rng.uniform(0.01, 0.2), rng.uniform(0.0, 0.5)
        for M in GRID:
            for N in GRID:
                if M >= N:
                    rows.append(
                        {
                            "M": M,
                            "N": N,
                            "type": t,
                            "count": 100,
                            "p": base_p * (1 + 0.01 * M),
                            "q": base_q * (1 + 0.02 * N),
                            "wait_thread": 0,
                            "wait_db": 0,
                            "q_active": 0,
                            "q_idle": 0,
                            "db_requests": 1,
                            "response_time": 0,
                        }
                    )
    share = pd.Series(rng.dirichlet(np.ones(len(TYPES))), index=TYPES)
    return ProfileGrid(pd.DataFrame(rows), pd.DataFrame(), share, 15.0, PoolSetting("app", "threads", "db"), "bench")


def peer(sizing: PoolSizing, V: pd.Series) -> tuple[int, int, float]:
    best = (0, 0, -1.0)
    for M in range(1, 201):
        for N in range(1, M + 1):
            p, q = sizing.p_q(M, N)
            sq = sum(V[t] * float(q[t]) for t in TYPES)
            sp = sum(V[t] * float(p[t]) for t in TYPES)
            lam = min(N / sq if sq > 0 else np.inf, M / (sp + sq))
            if lam > best[2]:
                best = (M, N, lam)
    return best


def main() -> None:
    grid = profile()
    V = grid.share * grid.L
    t0 = time.perf_counter()
    sizing = PoolSizing(grid)
    rates = sizing.rates(V, 200, 200)
    best = rates.best()
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    pM, pN, plam = peer(sizing, V)
    theirs = time.perf_counter() - t0
    assert (int(best["M"]), int(best["N"])) == (pM, pN) and abs(best["lambda"] - plam) < 1e-9 * plam
    print(f"points evaluated: {len(rates.table)} (M ≥ N, ≤ 200), types: {len(TYPES)}")
    print(f"tierlab (vectorised, incl. building the interpolants): {ours:.3f} s   target < 1 s")
    print(f"peer (point-by-point loop):                             {theirs:.3f} s")
    print(f"optimum: M={pM} N={pN} λ={plam:.4f} (both agree)")
    print(
        json.dumps(
            {
                "points": len(rates.table),
                "types": len(TYPES),
                "tierlab_s": round(ours, 4),
                "peer_s": round(theirs, 3),
                "speedup": round(theirs / ours, 1),
                "under_1s": ours < 1.0,
            }
        )
    )


if __name__ == "__main__":
    main()
