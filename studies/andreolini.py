"""Andreolini, Colajanni & Lancellotti on examples/andreolini_ecommerce.yaml: how the
memory of the database node and the clients' network move the capacity and the
bottleneck of a two-node e-commerce site.

1. Black-box (their Fig. 3): a client ramp for each memory scenario (well-connected
   clients); the knee of the 90th-percentile response-time curve is the capacity. Each
   ramp finds its own range (tierlab.experiments.ramp.bracket: doubling from 5 clients until the
   p90 has grown tenfold), so every knee sits inside an evenly spaced ramp.
2. White-box (their Figs. 5–7, Table 2): a run near each knee (1.1 × the knee, as the
   paper's 60/300/360 clients sit just past its 30/270/330) for every memory × network
   scenario; the level of every resource, and the bottleneck by tierlab.analysis.bottleneck.

    python studies/andreolini.py            # the full study
    python studies/andreolini.py --quick    # coarser ramps, one seed, shorter runs

Writes studies/results/andreolini[_quick]/: ramps.csv, knees.csv, whitebox.csv,
resources.csv, knees.png, whitebox.png and result.json (also printed last)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from tierlab import simulate  # noqa: E402
from tierlab.analysis.bottleneck import bottleneck, resources  # noqa: E402
from tierlab.experiments.ramp import ramp  # noqa: E402
from tierlab.trace import window_of  # noqa: E402

from provenance import output_dir, study_parser, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "andreolini_ecommerce.yaml"
MEMORY = ["mostly_on_disk", "partially_in_memory", "all_in_memory"]
# The paper's knees (Fig. 3, §VI) and bottlenecks (§VI-B, Table 2).
PAPER_KNEE = {"mostly_on_disk": 30, "partially_in_memory": 270, "all_in_memory": 330}
PAPER_BOTTLENECK = {
    ("mostly_on_disk", "well_connected"): "disk",
    ("partially_in_memory", "well_connected"): "sockets",
    ("all_in_memory", "well_connected"): "CPU",
    ("partially_in_memory", "badly_connected"): "sockets",
    ("all_in_memory", "badly_connected"): "sockets",
}
# What the model's resources are called in the paper.
PAPER_NAME = {"db.disk": "disk", "db.cpu": "CPU", "front.db_sockets": "sockets", "front.processes": "Apache processes", "front.cpu": "front CPU"}


def scenario(memory: str, network: str, duration: float, warmup: float) -> dict:
    model = yaml.safe_load(MODEL.read_text())
    model["tiers"]["db"]["stations"]["disk"]["memory"] = memory
    model["links"]["clients"] = {"preset": network}
    model["run"].update(duration=duration, warmup=warmup)
    return model


def main() -> None:
    ap = study_parser(__doc__)
    ap.add_argument("--scheduler", help="a Dask scheduler address (default: local processes)")
    a = ap.parse_args()
    out = output_dir("andreolini", a)
    duration, warmup = (300.0, 60.0) if a.quick else (1200.0, 200.0)
    seeds = (1,) if a.quick else (1, 2, 3)
    points = 15 if a.quick else 40

    # 1. Black-box: one ramp per scenario (the knees of the network scenarios, too, to
    # place their white-box runs).
    ramps, knees = [], []
    for memory, network in PAPER_BOTTLENECK:
        table, knee = ramp(
            scenario(memory, network, duration, warmup), seeds=seeds, scheduler=a.scheduler, progress=f"ramp {memory}/{network}", start=5, points=points
        )
        ramps.append(table.assign(memory=memory, network=network))
        knees.append(
            {
                "memory": memory,
                "network": network,
                "knee": knee.load,
                "p90_at_knee": knee.value,
                "throughput_at_knee": float(table.set_index("load").throughput.get(knee.load, float("nan"))),
                "paper_knee": PAPER_KNEE[memory] if network == "well_connected" else None,
            }
        )
    ramps, knees = pd.concat(ramps), pd.DataFrame(knees)
    ramps.to_csv(out / "ramps.csv", index=False)
    knees.to_csv(out / "knees.csv", index=False)

    # 2. White-box near each knee.
    rows, levels, series = [], [], {}
    for k in knees.itertuples():
        clients = round(1.1 * k.knee)
        model = scenario(k.memory, k.network, duration, warmup)
        model["workload"]["population"]["clients"] = clients
        trace = simulate(model)
        b = bottleneck(trace)
        r = resources(trace).assign(memory=k.memory, network=k.network, clients=clients)
        levels.append(r)
        ours = f"{b.tier}.{b.resource}"
        rows.append(
            {
                "memory": k.memory,
                "network": k.network,
                "clients": clients,
                "bottleneck": ours,
                "as_in_paper": PAPER_NAME.get(ours, ours),
                "kind": b.kind,
                "family": b.family,
                "level": b.level,
                "pinned": b.pinned,
                "paper": PAPER_BOTTLENECK[(k.memory, k.network)],
            }
        )
        if k.network == "well_connected":
            series[k.memory] = trace
    whitebox, levels = pd.DataFrame(rows), pd.concat(levels)
    whitebox.to_csv(out / "whitebox.csv", index=False)
    levels.to_csv(out / "resources.csv", index=False)

    _plot_knees(ramps, knees, out / "knees.png")
    _plot_whitebox(series, out / "whitebox.png")
    well = knees[knees.network == "well_connected"].set_index("memory")
    result = {
        "knee_clients": {m: well.knee[m] for m in MEMORY},
        "paper_knee_clients": PAPER_KNEE,
        "knee_ratio_partial_to_disk": well.knee["partially_in_memory"] / well.knee["mostly_on_disk"],
        "paper_ratio_partial_to_disk": 270 / 30,
        "knee_ratio_all_to_partial": well.knee["all_in_memory"] / well.knee["partially_in_memory"],
        "paper_ratio_all_to_partial": 330 / 270,
        "knee_clients_badly_connected": {m: float(k) for m, k in knees[knees.network == "badly_connected"].set_index("memory").knee.items()},
        "bottlenecks": [{k: r[k] for k in ("memory", "network", "clients", "as_in_paper", "paper")} for r in rows],
        "bottlenecks_matching_paper": int((whitebox.as_in_paper == whitebox.paper).sum()),
        "scenarios": len(whitebox),
    }
    print(whitebox[["memory", "network", "clients", "as_in_paper", "paper", "level", "pinned"]].to_string(index=False))
    write_result(out, result, seeds)


def _plot_knees(ramps: pd.DataFrame, knees: pd.DataFrame, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (memory, network), g in ramps.groupby(["memory", "network"], sort=False):
        line = ax.plot(g.load, g.p90, marker=".", label=f"{memory}, {network}")[0]
        k = knees[(knees.memory == memory) & (knees.network == network)].iloc[0]
        if k.knee is not None:
            ax.axvline(k.knee, color=line.get_color(), ls=":", lw=1)
    ax.set(xlabel="clients", ylabel="90th percentile response time (s)", yscale="log", title="Black-box: p90 and its knee (dotted) per scenario")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _plot_whitebox(traces: dict, path: Path) -> None:
    """Sockets, back-end CPU and disk over time near each knee (the paper's Figs. 5–7), at 10 s."""
    panels = [
        ("front", "db_sockets", "busy", "open DB sockets (of 105)"),
        ("db", "cpu", "utilization", "back-end CPU utilization"),
        ("db", "disk", "utilization", "disk utilization"),
    ]
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 7), sharex=True)
    for memory, trace in traces.items():
        for ax, (tier, resource, metric, label) in zip(axes, panels):
            s = trace.series(tier, metric, resource, server=0)[0]
            s = s.groupby(window_of(s.index, 10)).mean()
            ax.plot(s.index, s.to_numpy(), label=memory)
            ax.set_ylabel(label, fontsize=8)
    axes[0].legend(fontsize=8)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("White-box near the knee, well-connected clients")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
