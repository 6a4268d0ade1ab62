"""Figures (matplotlib, written as PNG without a display): a ramp's p90 curve and
knee, a trace's rate and residence per tier at two window sizes, the pool-sizing
λ(M, N) curves, and the contention cost fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def ramp_plot(table: pd.DataFrame, knee_load: float | None, path: str | Path) -> None:
    """p90 response time against load, the knee marked."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(table.load, table.p90, "o-")
    if knee_load is not None:
        ax.axvline(knee_load, ls="--", color="grey", label=f"knee {knee_load:g}")
        ax.legend()
    ax.set_xlabel("load")
    ax.set_ylabel("p90 response time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fluctuations_plot(trace: Any, tiers: list[str], path: str | Path) -> None:
    """Request rate and mean residence per tier at 100 ms and at 10 s windows."""
    from ..analysis.fluctuations import rate, residence

    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(12, 6), sharex=True)
    for j, every in enumerate((0.1, 10.0)):
        for name in tiers:
            axes[0][j].plot(rate(trace, name, every), label=name, lw=0.6)
            axes[1][j].plot(residence(trace, name, every), label=name, lw=0.6)
        axes[0][j].set_title(f"{every:g} s windows")
        axes[0][j].set_ylabel("requests/s")
        axes[1][j].set_ylabel("mean residence (s)")
        axes[1][j].set_xlabel("time (s)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def rates_plot(rates: Any, path: str | Path) -> None:
    """λ(M, N) per M over N (a few M), and λ(N) = the best M per N."""
    plt = _pyplot()
    t = rates.table
    fig, ax = plt.subplots(figsize=(6, 4))
    for M in sorted(t.M.unique())[:: max(1, len(t.M.unique()) // 8)]:
        d = t[t.M == M].sort_values("N")
        ax.plot(d.N, d["lambda"], lw=0.8, label=f"M={M}")
    by_n = rates.by_N()
    ax.plot(by_n.N, by_n["lambda"], "k-", lw=2, label="λ(N)")
    ax.set_xlabel("DB connections N")
    ax.set_ylabel("max sustainable sessions/s")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def cost_fit_plot(model: Any, path: str | Path) -> Path:
    """Measured vs fitted cost over threads, one panel per client count."""
    plt = _pyplot()
    groups = list(model.data.groupby("clients"))
    fig, axes = plt.subplots(1, len(groups), figsize=(4 * len(groups), 3.5), squeeze=False)
    for ax, (x, d) in zip(axes[0], groups):
        d = d.sort_values("threads")
        ys = np.geomspace(d["threads"].min(), d["threads"].max(), 100)
        ax.plot(d["threads"], d["value"], "o", label="measured")
        ax.plot(ys, model.cost(x, ys), "-", label="model")
        ax.axvline(model.optimal_threads(x), ls=":", color="grey", label="y*")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{x:g} clients")
        ax.set_xlabel("threads")
    axes[0][0].set_ylabel("cost")
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def usl_plot(usl: Any, concurrency: Any, throughput: Any, path: str | Path) -> Path:
    """Measured throughput and the fitted Universal Scalability Law, N* marked."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    n = np.linspace(0, max(float(np.max(concurrency)), usl.n_star or 0) * 1.1, 200)
    ax.plot(concurrency, throughput, "o", label="measured")
    ax.plot(n, usl.throughput(n), "-", label=f"USL σ={usl.sigma:.3g} κ={usl.kappa:.3g}")
    if usl.n_star is not None:
        ax.axvline(usl.n_star, ls=":", color="grey", label=f"N* {usl.n_star:.3g}")
    ax.set_xlabel("concurrency")
    ax.set_ylabel("throughput (req/s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def twin_plot(table: pd.DataFrame, path: str | Path) -> Path:
    """`twin verify`'s steps: throughput and mean response time against load, live
    (dots) and twin (lines), one colour per (M, N) and mix."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for i, ((M, N, mix), steps) in enumerate(table.groupby(["M", "N", "mix"], sort=False)):
        colour, name = f"C{i % 10}", f"M={M} N={N}" + ("" if mix == "model" else f" {mix}")
        for ax, figure, scale in ((axes[0], "throughput", 1.0), (axes[1], "rt_mean", 1e3)):
            ax.plot(steps.load, steps[f"{figure}.measured"] * scale, "o", color=colour, label=f"live {name}")
            ax.plot(steps.load, steps[f"{figure}.predicted"] * scale, "-", color=colour, label=f"twin {name}")
    axes[0].set_ylabel("throughput (requests/s)")
    axes[1].set_ylabel("mean response time (ms)")
    for ax in axes:
        ax.set_xlabel("load")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
