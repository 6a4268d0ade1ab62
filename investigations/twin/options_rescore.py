"""Issue 41's calibration options on live runs already measured: the twin calibrated
from a twin study's committed calibration runs with each set of `twin calibrate`
options (the interpreter lock, items 3; the growth of the CPU per request once, item
4), its side of that study's verification steps recomputed against their recorded
live side (`verify(recorded=)`: nothing runs live, so it regenerates exactly), and its
throughput and mean response time errors on the steps it was not calibrated on.

    python investigations/twin/options_rescore.py [--study twin|FOLDER] [--db sqlite,postgres]

The study's own calibration is `twin calibrate --handoff` (`handoff` below); each
option set adds to it. The steps are the study's: loads of 40% and 80% of each
configuration's measured capacity, and at the calibrated (8, 4) a mix with Search
twice as likely. A study whose steps were repeated (`repeat` in verify.csv) is scored
against the repeats' mean, as the study scores it (`verify.repeated`).

No criteria: the options were tried on these runs while they were built (a throwaway
run of the same at 1f17522), so any criterion written now would be written after the
fact. The test is the study's, on live runs none of this has seen: `python
studies/twin.py --quick --resume --lock --idle-handoff --request-growth` after a fresh
quick run, with the options against without."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd

from tierlab.errors import ModelWarning
from tierlab.experiments.study.provenance import output_dir, root, study_parser, write_result
from tierlab.experiments.twin import calibrate
from tierlab.experiments.twin.setup import CALIBRATED, study_model
from tierlab.experiments.twin.verify import repeated, verify
from tierlab.live.mapping import load_mapping

OPTIONS = {
    "handoff": {},
    "lock": {"lock": True},
    "request_growth": {"request_growth": True},
    "idle_handoff+request_growth": {"idle_handoff": True, "request_growth": True},
    "lock+request_growth": {"lock": True, "request_growth": True},
    "lock+idle_handoff+request_growth": {"lock": True, "idle_handoff": True, "request_growth": True},
}
FIGURES = ("throughput", "rt_mean")


def rescored(folder, options: dict) -> tuple[pd.DataFrame, dict]:
    """The study folder's verification steps with the twin's side from a twin calibrated
    with `options`, and the calibration's report."""
    first = json.loads((folder / "calibration" / "run1" / "summary.json").read_text())
    at = {"tiers.app.pools.threads.size": CALIBRATED[0], "tiers.app.pools.db.size": CALIBRATED[1]}
    model = study_model(first["warmup"], first["measured_seconds"]).with_changes(at)
    cal = calibrate(sorted((folder / "calibration").glob("run*")), model, handoff=True, **options)
    twin = cal.loaded()
    recorded = pd.read_csv(folder / "verify.csv")
    mapping = load_mapping(folder / "http.yaml")
    steps = []
    for _, step in recorded.iterrows():
        mix = {} if step["mix"] == "model" else {k: float(v) for k, v in (x.split("=") for x in step["mix"].split(","))}
        same = recorded[recorded["repeat"] == step["repeat"]] if "repeat" in recorded else recorded
        one = verify(twin, None, mapping, [float(step.load)], [(int(step.M), int(step.N))], cal.cores["speed"], [mix], probe=cal.probe_ms, recorded=same)  # type: ignore[arg-type]
        steps.append(one.assign(repeat=step["repeat"]) if "repeat" in recorded else one)
    table = pd.concat(steps, ignore_index=True)
    if "repeat" in recorded:
        table = repeated(table, cal.probe_ms)
    table["unseen"] = [(M, N) != CALIBRATED or mix != "model" for M, N, mix in zip(table.M, table.N, table["mix"])]
    return table, cal.report()


def main() -> None:
    ap = study_parser(__doc__, quick=False)
    ap.add_argument("--study", default="twin", help="the twin study's results folder: its name under studies/results, or a path")
    ap.add_argument("--db", default="sqlite,postgres")
    a = ap.parse_args()
    study = Path(a.study) if Path(a.study).is_dir() else root() / "studies" / "results" / a.study
    out = output_dir("options_rescore" if a.study == "twin" else f"options_rescore_{study.name}", a)
    warnings.simplefilter("ignore", ModelWarning)  # the twin at a calibration run's load past its capacity: the runs say so themselves
    rows, summary = [], {}
    for db in a.db.split(","):
        folder = study / db
        for name, options in OPTIONS.items():
            table, report = rescored(folder, options)
            unseen = table[table.unseen]
            figures = {f"{f}_error_max": float(unseen[f"{f}.error"].abs().max()) for f in FIGURES}
            figures |= {f"{f}_error_mean": float(unseen[f"{f}.error"].abs().mean()) for f in FIGURES}
            summary[f"{db}/{name}"] = figures | {k: report[k] for k in ("interpreter_lock", "growth_once") if k in report}
            rows.append(
                table[["M", "N", "mix", "load", "unseen", *(f"{f}.{s}" for f in FIGURES for s in ("measured", "predicted", "error"))]].assign(
                    db=db, options=name
                )
            )
            print(f"{db} {name}: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()), flush=True)
    pd.concat(rows, ignore_index=True).to_csv(out / "steps.csv", index=False)
    write_result(out, {"study": a.study, "options": OPTIONS, "results": summary}, [])


if __name__ == "__main__":
    main()
