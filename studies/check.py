"""Re-run the studies and compare what they write with the committed results.

    python studies/check.py --quick          # every quick study (what CI runs)
    python studies/check.py --quick wang     # one of them
    python studies/check.py                  # the full studies (hours on 2 cores)

Each study runs into a scratch folder with the command its committed result.json
records; every committed file is then compared with the new one: JSON and CSV figure
by figure and exactly (the runs are deterministic for a model and its seeds), other
text line by line. Images are regenerated but not compared, since their bytes depend
on the matplotlib version. The first difference is reported with the file and the
figure, and the exit status is 1. The live studies (`live_sizing.py`, `cluster_live.py`,
`twin.py`) and investigations (investigations/twin: all but `cpu_growth.py`) run on the
live testbed in real time on a shared machine, so their figures cannot be re-run to the
byte (not even `cluster_live.py --quick`'s simulated half, calibrated from a live
profile) and they are not checked here. `cpu_growth` (investigations/twin) reads
committed traces and runs nothing, and `capacity_noise` and `late_moves`
(investigations/control) simulate: all three are checked, each from its own results
folder.

When a comparison fails, the versions of Python and the numerical packages each result
ran with (result.json's `versions`) are named, committed -> now."""

from __future__ import annotations

import argparse
import csv
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# A script beside the studies (imported by the tests too): its own folder, not the running script's.
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Where committed results live: the reproductions' and each investigation's.
HOMES = (HERE / "results", *sorted((ROOT / "investigations").glob("*/results")))

# The full studies whose results are committed. `pool_sizing.py`'s full run (~40 min)
# is not: its load-structure profile did not regenerate exactly, and a result that
# cannot be regenerated is deleted rather than kept (its command regenerates it).
STUDIES = (
    "andreolini",
    "capacity_noise",
    "cluster_dispatch",
    "connection_caching",
    "cost_model",
    "cpu_growth",
    "late_moves",
    "pool_sizing",
    "validation_run_length",
    "wang",
)
QUICK = ("andreolini", "cluster_dispatch", "connection_caching", "control", "pool_sizing", "wang")
NOT_COMPARED = {".png"}
# Written by hand beside a study's outputs, not by the study.
HAND_WRITTEN = {"notes.md"}
# A resumable study's cache of finished runs (pool_sizing's --resume; git-ignored): no result.
CACHES = {"partial"}
# Provenance that names the run, not its outcome (named when a comparison fails).
RUN_KEYS = {"commit", "versions"}


def first_difference(committed: Path, fresh: Path) -> str | None:
    """Where `fresh` first differs from `committed` (a folder or a file), or None."""
    if committed.is_dir():
        names = sorted(({p.name for p in committed.iterdir()} | ({p.name for p in fresh.iterdir()} if fresh.is_dir() else set())) - CACHES)
        for name in names:
            if (found := first_difference(committed / name, fresh / name)) is not None:
                return found
        return None
    if committed.name in HAND_WRITTEN:
        return None
    if not committed.exists():
        return f"{fresh.name}: written by the study but not committed"
    if not fresh.exists():
        return f"{committed}: committed but the study no longer writes it"
    if committed.suffix in NOT_COMPARED:
        return None
    if committed.suffix == ".json":
        old, new = (json.loads(p.read_text()) for p in (committed, fresh))
        for record in (old, new):
            if isinstance(record, dict):  # result.json; claims.json is a list
                for key in RUN_KEYS:
                    record.pop(key, None)
        where = _json_difference(old, new, "")
        return None if where is None else f"{committed}: {where}"
    if committed.suffix == ".csv":
        return _csv_difference(committed, fresh)
    old_lines, new_lines = committed.read_text().splitlines(), fresh.read_text().splitlines()
    for i, (a, b) in enumerate(zip(old_lines, new_lines), 1):
        if a != b:
            return f"{committed}:{i}: committed {a!r}, now {b!r}"
    return None if len(old_lines) == len(new_lines) else f"{committed}: {len(old_lines)} lines committed, {len(new_lines)} now"


def _json_difference(old: Any, new: Any, path: str) -> str | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            if key not in old or key not in new:
                return f"{path}{key}: {'only committed' if key in old else 'new'}"
            if (found := _json_difference(old[key], new[key], f"{path}{key}.")) is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return f"{path.rstrip('.')}: {len(old)} items committed, {len(new)} now"
        for i, (a, b) in enumerate(zip(old, new)):
            if (found := _json_difference(a, b, f"{path.rstrip('.')}[{i}].")) is not None:
                return found
        return None
    return None if old == new else f"{path.rstrip('.')}: committed {old!r}, now {new!r}"


def _csv_difference(committed: Path, fresh: Path) -> str | None:
    with committed.open(newline="") as a, fresh.open(newline="") as b:
        old, new = list(csv.reader(a)), list(csv.reader(b))
    header = old[0] if old else []
    for row, (x, y) in enumerate(zip(old, new), 1):
        for col, (u, v) in enumerate(zip(x, y)):
            if u != v:
                name = header[col] if col < len(header) else f"column {col + 1}"
                return f"{committed}: line {row}, {name}: committed {u!r}, now {v!r}"
        if len(x) != len(y):
            return f"{committed}: line {row}: {len(x)} fields committed, {len(y)} now"
    return None if len(old) == len(new) else f"{committed}: {len(old)} lines committed, {len(new)} now"


def committed_folder(study: str, quick: bool) -> Path:
    """The study's committed results: the first home holding them (else the studies')."""
    name = f"{study}_quick" if quick else study
    return next((home / name for home in HOMES if (home / name / "result.json").is_file()), HOMES[0] / name)


def check(study: str, quick: bool) -> str | None:
    """Re-run one study; the first difference from its committed result, or None."""
    committed = committed_folder(study, quick)
    if not (committed / "result.json").exists():
        return f"{committed}: no committed result.json to compare with"
    command = json.loads((committed / "result.json").read_text()).get("command")
    if not command:
        return f"{committed / 'result.json'}: records no `command`; regenerate it"
    argv = shlex.split(command)
    with tempfile.TemporaryDirectory(prefix=f"check-{study}-") as scratch:
        print(f"{study}: {command}", flush=True)
        done = subprocess.run([sys.executable, *argv[1:], "--out", scratch], cwd=ROOT, stdout=subprocess.DEVNULL)
        if done.returncode:
            return f"{study}: `{command}` exited with {done.returncode}"
        found = first_difference(committed, Path(scratch))
        return None if found is None else f"{found}\n{versions(committed / 'result.json', Path(scratch) / 'result.json')}"


def versions(committed: Path, fresh: Path) -> str:
    """The interpreter and numerical packages each result ran with, committed against now
    (a changed last bit of a library is the usual suspect when the code did not change)."""
    old, new = (json.loads(p.read_text()).get("versions") if p.is_file() else None for p in (committed, fresh))
    if not new:
        return "versions: the new result records none"
    if not old:
        return "versions: the committed result records none (written before they were recorded); now " + ", ".join(f"{k} {v}" for k, v in new.items())
    differ = [f"{k} {old.get(k, 'not recorded')} -> {new.get(k, 'not recorded')}" for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)]
    same = [f"{k} {v}" for k, v in new.items() if old.get(k) == v]
    return f"versions, committed -> now: {', '.join(differ) or 'all the same'}" + (f" (the same: {', '.join(same)})" if differ and same else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the quick studies (what CI runs)")
    ap.add_argument("studies", nargs="*", help=f"which (default: all of {', '.join(STUDIES)}, or with --quick {', '.join(QUICK)})")
    a = ap.parse_args()
    known = QUICK if a.quick else STUDIES
    unknown = [s for s in a.studies if s not in known]
    if unknown:
        ap.error(f"unknown study {unknown[0]!r}; choose from {', '.join(known)}")
    for study in a.studies or known:
        difference = check(study, a.quick)
        if difference is not None:
            print(f"DIFFERS: {difference}", file=sys.stderr)
            sys.exit(1)
        print(f"{study}: matches the committed result", flush=True)


if __name__ == "__main__":
    main()
