"""Pool sizing (Totok & Karamcheti) and the contention cost model (Chen & Gorton):
formulas against hand-computed values and the papers' own tables, profiling and the
capacity search on small runs, and the sweep runner on every executor."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import tierlab
from tierlab.analysis import costfit
from tierlab.experiments.costtable import simulate_table
from tierlab.experiments.sizing import MixWarning, PoolSetting, PoolSizing, ProfileGrid, max_sustainable_rate, mix_distance, profile_grid
from tierlab.experiments.sizing.method import LAMBDA_TOLERANCE
from tierlab.run import Run, sweep

from conftest import EXAMPLES, connection_bound_model, one_pool_model, throughput

# The paper's Table I ("max-loaded", M = N = 30, seconds) and Table II.
TABLE_I = {  # type: (p, q)
    "Home": (0.235, 0.0),
    "Search": (0.101, 0.646),
    "Item": (0.026, 0.311),
    "Add To Cart": (0.061, 0.227),
    "Cart": (0.008, 0.0),
    "Register": (0.007, 0.0),
    "Buy Request": (0.205, 0.940),
    "Buy Confirm": (0.230, 1.165),
}
TYPES = list(TABLE_I)
PROFILING = pd.Series([6.82, 31.93, 42.73, 4.76, 2.03, 3.58, 3.58, 3.58], index=TYPES) / 100
LOAD1 = pd.Series([5.53, 30.31, 57.73, 1.76, 0.7, 1.32, 1.32, 1.32], index=TYPES) / 100
LOAD2 = pd.Series([5.37, 48.07, 41.55, 1.39, 0.53, 1.03, 1.03, 1.03], index=TYPES) / 100


def _table_i_grid() -> ProfileGrid:
    """Table I's values at a few (M, N) around (30, 30), so (30, 30) is a data point."""
    rows = [
        {
            "M": M,
            "N": N,
            "type": t,
            "count": 100,
            "wait_thread": 0.0,
            "p": p,
            "wait_db": 0.0,
            "q_active": q,
            "q_idle": 0.0,
            "q": q,
            "db_requests": 1.0,
            "response_time": p + q,
        }
        for M, N in [(30, 30), (30, 10), (20, 10), (20, 20), (40, 20), (40, 40)]
        for t, (p, q) in TABLE_I.items()
    ]
    return ProfileGrid(pd.DataFrame(rows), pd.DataFrame(), PROFILING, 14.67, PoolSetting("app", "threads", "db"), "table-i")


def test_lambda_formulas_on_the_papers_table_i():
    # By hand: ΣV_i q_i = 14.67 × Σ s_i q_i = 14.67 × 0.425330 = 6.23959 s, and
    # ΣV_i p_i = 14.67 × 0.078276 = 1.14831 s, so at M = N = 30
    # λ_DB = 30 / 6.23959 = 4.8080, λ_THR = 30 / 7.38790 = 4.0607, λ = 4.0607 sessions/s.
    t = PoolSizing(_table_i_grid()).rates().table.set_index(["M", "N"])
    row = t.loc[(30, 30)]
    assert row["lambda_db"] == pytest.approx(4.8080, rel=2e-4)
    assert row["lambda_thr"] == pytest.approx(4.0607, rel=2e-4)
    assert row["lambda"] == pytest.approx(4.0607, rel=2e-4)


def test_mix_distance_of_the_papers_loads():
    # Total variation from Table II: ½·29.02% and ½·31.29% as printed; the profiling
    # column sums to 99.01%, and rescaled to 100% the distances are 0.1458 and 0.1582.
    assert mix_distance(LOAD1, PROFILING) == pytest.approx(0.1458, abs=1e-4)
    assert mix_distance(LOAD2, PROFILING) == pytest.approx(0.1582, abs=1e-4)
    sizing = PoolSizing(_table_i_grid())
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixWarning)
        sizing.rates(LOAD2 * 18.62)  # close enough: no warning
    far = pd.Series({"Home": 0.9, "Search": 0.1})
    with pytest.warns(MixWarning, match="profile again"):
        sizing.rates(far * 10)


def _synthetic(M, N):
    """p grows with M (CPU contention); q/N, the DB's inverse throughput, first falls
    (parallelism) then rises (contention) with N."""
    return 0.05 + 0.002 * M**2, N * 0.1 * (1 - 0.04 * N + 0.002 * N**2)


def _closed_form(M, N):
    p, q = _synthetic(M, N)
    return N / q, M / (p + q)


def test_optimum_lambda_of_N_and_servers_on_a_synthetic_profile():
    rows = []
    for M in (5, 10, 15, 20, 30):
        for N in (1, 2, 5, 10, 15, 20, 30):
            if M >= N:
                p, q = _synthetic(M, N)
                rows.append(
                    {
                        "M": M,
                        "N": N,
                        "type": "A",
                        "count": 10,
                        "p": p,
                        "q": q,
                        "wait_thread": 0,
                        "wait_db": 0,
                        "q_active": q,
                        "q_idle": 0,
                        "db_requests": 1,
                        "response_time": 0,
                    }
                )
    grid = ProfileGrid(pd.DataFrame(rows), pd.DataFrame(), pd.Series({"A": 1.0}), 1.0, PoolSetting("app", "t", "c"), "synthetic")
    rates = PoolSizing(grid).rates()
    t = rates.table.set_index(["M", "N"])
    for M, N in [(10, 5), (30, 20), (20, 15)]:  # profiled points: the interpolant passes through them
        assert t.loc[(M, N), ["lambda_db", "lambda_thr"]].tolist() == pytest.approx(_closed_form(M, N), rel=1e-9)
    for M, N in [(17, 3), (12, 8), (25, 12)]:  # between points: close to the smooth truth
        assert t.loc[(M, N), ["lambda_db", "lambda_thr"]].tolist() == pytest.approx(_closed_form(M, N), rel=0.03)
    best = rates.best()
    truth = {(M, N): min(_closed_form(M, N)) for M in range(5, 31) for N in range(1, M + 1)}
    # The configuration the method picks is (truly) within 1% of the true best. Its λ is
    # the truth's best, but held to the best profiled λ plus the measurement error: here
    # the true peak lies 2.9% above every profiled point, and nothing measured shows it.
    assert truth[(int(best["M"]), int(best["N"]))] == pytest.approx(max(truth.values()), rel=0.01)
    profiled = max(min(_closed_form(M, N)) for M in (5, 10, 15, 20, 30) for N in (1, 2, 5, 10, 15, 20, 30) if M >= N)
    assert best["lambda"] == pytest.approx(min(max(truth.values()), profiled * (1 + LAMBDA_TOLERANCE)), rel=0.01)
    by_n = rates.by_N().set_index("N")
    assert by_n.loc[int(best["N"]), "lambda"] == best["lambda"]
    assert rates.servers_for(best["lambda"] * 2.5) == 3 and rates.servers_for(best["lambda"]) == 1


def test_no_grid_point_with_M_at_least_N():
    with pytest.raises(tierlab.InputError, match="no point with M ≥ N"):
        profile_grid(tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml"), M_values=[1, 2], N_values=[5, 10])


def test_profiling_measures_contention_on_the_example():
    """A small grid on the TPC-W example: every point ends slightly overloaded, p grows
    with M (CPU contention) and q grows with N (database contention)."""
    model = tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_changes({"run.duration": 700})
    grid = profile_grid(model, M_values=(5, 20), N_values=(2, 5, 20), progress=False)
    assert grid.runs["overloaded"].all()
    assert grid.L == pytest.approx(15, rel=0.1)
    pts = grid.points.set_index(["M", "N", "type"])
    assert pts.loc[(20, 5, "HOME"), "p"] > 1.5 * pts.loc[(5, 5, "HOME"), "p"]
    assert pts.loc[(20, 20, "SRES"), "q"] > 1.2 * pts.loc[(20, 2, "SRES"), "q"]
    assert pts.loc[(20, 20, "SRES"), "db_requests"] == 1.0  # request-wide caching
    # Cached between accesses while the app does entity-bean work: idle; Home has no DB access.
    assert (pts.xs("SRES", level="type")["q_idle"] > 0).all() and (pts.xs("HOME", level="type")["q"] == 0).all()
    # Contention makes more of either pool worse past a point: without it λ(M, N) would
    # grow with both and the largest pools (20, 20) would win. The optimum is the table's
    # largest λ, and at a profiled point λ is the paper's formula by hand.
    rates = PoolSizing(grid).rates()
    best = rates.best()
    table = rates.table.set_index(["M", "N"])["lambda"]
    assert best["lambda"] == table.max() and 5 < best["M"] < 20 and best["N"] < 20
    # Every profiled point has q > 0, so no interpolated Σ V·q may reach 0 (a cubic's
    # overshoot once gave Search q < 0 at (12, 12), λ_DB = ∞ and a false optimum there).
    assert np.isfinite(rates.table["lambda_db"]).all()
    assert table.loc[(20, 20)] < best["lambda"]
    V = grid.share * grid.L
    at = pts.xs((20, 20), level=["M", "N"])
    assert table.loc[(20, 20)] == pytest.approx(min(20 / (V * at["q"]).sum(), 20 / (V * (at["p"] + at["q"])).sum()), rel=1e-9)


def test_capacity_search_walks_the_rate_grid():
    """One connection serving 0.1 s jobs: nothing is sustainable at 10 sessions/s or more,
    and with a 1 s acquire timeout an M/M/1 queue overflows well before that."""
    result, trials = max_sustainable_rate(one_pool_model(1.0), [(4, 1)], 5.0, step=0.5, runs=3, progress=False)
    lam = result["lambda_max"].iloc[0]
    assert 0 < lam < 10
    t = trials.set_index("lambda")
    assert t.loc[lam, "passed"] and not t.loc[lam + 0.5, "passed"]
    assert (t["passed_runs"] <= t["runs"]).all()


def test_a_pipelined_profile_is_the_one_of_one_worker():
    """Each point's next run goes out as soon as its own runs are back (issue 19), so
    with two workers the points' rounds interleave and finish in another order; the
    profile is still the one-worker profile, value for value. Here the points with one
    connection reject enough at once and those with two need further rounds."""
    model = tierlab.load_model(one_pool_model(1.0)).with_changes({"run.duration": 300, "run.warmup": 50, "run.records": True})
    how = {"seeds": (1, 2), "overload": 0.05, "min_rejected": 0.08, "max_rounds": 3, "bound": 20.0, "progress": False}
    lines: list[str] = []
    one = profile_grid(model, (1, 2, 4, 8), (1, 2), workers=1, log=lines.append, **how)
    two = profile_grid(model, (1, 2, 4, 8), (1, 2), workers=2, **how)
    rounds = [int(x.split(":")[0].removeprefix("profiling round ")) for x in lines if x.startswith("profiling round")]
    assert rounds.count(1) == 14 and 0 < rounds.count(2) < 14  # chains of different lengths
    pd.testing.assert_frame_equal(one.points, two.points, check_exact=True)
    pd.testing.assert_frame_equal(one.runs, two.runs, check_exact=True)
    assert (one.L, one.share.to_dict()) == (two.L, two.share.to_dict())


def test_sweep_names_the_bad_run():
    with pytest.raises(tierlab.ModelError, match=r"run 1 \(tiers.app.pools.db.size=0, seed=1\)"):
        sweep(one_pool_model(1.0), [Run({}), Run({"tiers.app.pools.db.size": 0})], throughput, progress=None)


# ---- Chen & Gorton ----------------------------------------------------------------------


def test_cost_model_reproduces_the_papers_fit():
    model = costfit.fit(costfit.read_table(EXAMPLES / "chen_gorton_stockonline.csv"))
    assert model.a == pytest.approx(6.65, rel=0.02)
    assert model.b == pytest.approx(5.42, rel=0.02)
    assert model.c == pytest.approx(5.24, rel=0.02)
    assert [model.optimal_threads(x) for x in (100, 200, 400, 800)] == [10, 14, 20, 29]
    assert 0.9 < model.r2 < 1 and all(0 < s < 2 for s in model.stderr.values())
    # Standard errors from an independent route: the covariance of the normal equations.
    d = model.data
    X = np.column_stack([d.clients, d.clients / d.threads, d.threads])
    resid = d.value - model.cost(d.clients, d.threads)
    cov = (resid @ resid) / (len(d) - 3) * np.linalg.inv(X.T @ X)
    assert model.stderr["b"] == pytest.approx(np.sqrt(cov[1, 1]), rel=1e-9)


def test_cost_model_recovers_known_parameters():
    """Costs drawn from C = a·x + b·x/y + c·y with a, b, c known plus normal noise (the
    fit's own assumption): each fitted parameter lies within 3 of its standard errors of
    the truth, and y* = √(b·x/c)."""
    a, b, c = 0.5, 40.0, 2.0
    x, y = (g.ravel().astype(float) for g in np.meshgrid([50, 100, 200, 400, 800], [1, 2, 4, 8, 16, 32, 64, 128]))
    truth = a * x + b * x / y + c * y
    noisy = truth + 0.005 * truth.mean() * np.random.default_rng(7).standard_normal(len(x))
    fit = costfit.fit(pd.DataFrame({"clients": x, "threads": y, "value": noisy}))
    for name, value in {"a": a, "b": b, "c": c}.items():
        assert abs(getattr(fit, name) - value) < 3 * fit.stderr[name], name
    assert fit.optimal_threads(400) == round(math.sqrt(fit.b * 400 / fit.c))
    # c's standard error is ~3% of c here, so y* ∝ c^(-1/2) is known to ~1.5%: 5% is over 3σ.
    assert fit.optimal_threads(400) == pytest.approx(math.sqrt(b * 400 / c), rel=0.05)


def test_cost_model_recovers_known_parameters_from_a_simulated_closed_system():
    """A closed system with x clients and y threads of one CPU: the fit finds b > 0 (the
    queue) and c > 0 (contention with threads), and y* grows like √x."""
    m = {
        "run": {"duration": 400, "warmup": 50, "records": False},
        "tiers": {"app": {"pools": {"threads": {"kind": "threads", "size": 4}}, "stations": {"cpu": {"kind": "cpu", "cores": 1, "overhead": 0.02}}}},
        "requests": {"job": {"app": [{"acquire": "threads"}, {"cpu": {"exponential": 0.01}}, {"delay": {"exponential": 0.02}}, {"release": "threads"}]}},
        "workload": {"population": {"clients": 10}, "think": 0.0, "chain": {"matrix": {"job": {"job": 1}}, "start": "job"}},
    }
    table = simulate_table(tierlab.load_model(m), clients=[20, 40, 80], threads=[1, 2, 4, 8, 16, 32], progress=False)
    fit = costfit.fit(table)
    assert fit.b > 0 and fit.c > 0
    assert fit.optimal_threads(80) > fit.optimal_threads(20)


@pytest.mark.parametrize(
    "text,message",
    [
        ("clients,threads,value\n100,1,5\n100,2\n", "line 3: value"),
        ("clients,threads,value\n100,1,5\n100,2,5,7\n", "not a regular CSV"),
        ("clients,threads,value\n100,1,fast\n", "line 2: value = 'fast'"),
        ("clients,threads,value\n100,0,5\n", "line 2: threads"),
        ("clients,threads,value\n-4,1,5\n", "line 2: clients"),
        ("clients,value\n100,5\n", "missing column(s) threads"),
        ("clients,threads,value\n100,1,5\n200,1,9\n100,2,4\n", "3 measurements cannot fit 3 parameters"),
        ("clients,threads,value\n100,1,5\n200,2,9\n400,4,4\n800,8,3\n", "do not determine"),
    ],
)
def test_cost_model_bad_tables(tmp_path, text, message):
    f = tmp_path / "t.csv"
    f.write_text(text)
    with pytest.raises(tierlab.InputError) as e:
        costfit.fit(costfit.read_table(f))
    assert message in str(e.value)


def test_sizing_by_simulation_searches_down_from_the_cpu_bound():
    """The twin route: every candidate's λ_max found from the model's CPU bound (200/s)
    down, each below the connections' bound 10·N and above 3·N (there, with one
    connection, a wait over the 1 s timeout has probability ρ·e^{-(μ-λ)} = 0.3·e^{-7},
    one in 3,600 requests), and the optimum is the configuration with two connections."""
    from tierlab.experiments.sizing import sizing_by_simulation

    table, trials, best = sizing_by_simulation(connection_bound_model(), [2, 4], [1, 2], step=0.5, runs=2, workers=1, progress=False)
    assert trials["lambda"].max() >= 190  # the search started at the CPU bound
    lam = table.set_index(["M", "N"])["lambda_max"]
    assert table["bracketed"].all()
    for (M, N), x in lam.items():
        assert 3 * N <= x < 10 * N, (M, N, x)
    assert best["N"] == 2 and best["lambda_max"] == lam.max()
    assert best["M"] == table[table["lambda_max"] == lam.max()]["M"].min()  # among equals, fewer threads


def test_best_sustainable_breaks_ties_toward_smaller_pools():
    from tierlab.experiments.sizing import best_sustainable

    table = pd.DataFrame({"M": [8, 4, 4, 2], "N": [4, 4, 2, 2], "lambda_max": [3.0, 3.0, 3.0, 2.5]})
    assert best_sustainable(table)[["M", "N"]].tolist() == [4, 2]


def test_profile_refine_closes_in_on_capacity():
    """One connection holding 0.1 s (capacity 10 sessions/s; a 5 s timeout makes
    rejections appear sharply near it). A pilot at 4/s climbs by ×1.5 (6, 9, 13.5): the
    first rate that rejects is up to a whole step past capacity; refining closes in
    from both sides, so the profile is taken at a lower rate that still rejects, above
    the climb's last rate that served everything."""
    five = {f"tiers.app.pools.{p}.timeout": 5 for p in ("db", "threads")}
    model = connection_bound_model().with_changes({"run.records": True, **five})  # profiles need the records
    coarse, fine = (profile_grid(model, [2], [1], overload=0.5, bound=2.0, refine=r, workers=1, progress=False).runs.iloc[0] for r in (0, 3))
    assert coarse.overloaded and fine.overloaded
    assert coarse.offered / 1.5 < fine.offered < coarse.offered
    assert fine.offered < 11  # within 10% of the capacity; the climb stopped at 13.8


def test_a_capacity_search_that_stops_decided_runs_finds_the_same_capacity():
    """With `decided`, a rate's runs stop once 3 of 5 passed or failed (the seeds in
    order): every verdict, and so the capacity, is the full search's, from fewer runs."""
    full, full_trials = max_sustainable_rate(one_pool_model(1.0), [(4, 1)], 5.0, step=0.5, runs=5, progress=False)
    short, short_trials = max_sustainable_rate(one_pool_model(1.0), [(4, 1)], 5.0, step=0.5, runs=5, progress=False, decided=True)
    pd.testing.assert_frame_equal(short, full)
    assert short_trials[["lambda", "passed"]].equals(full_trials[["lambda", "passed"]])
    assert (short_trials["runs"] >= 3).all() and short_trials["runs"].sum() < full_trials["runs"].sum()
    assert ((short_trials["passed_runs"] >= 3) | (short_trials["runs"] - short_trials["passed_runs"] >= 3)).all()
