"""What every study shares: its command line, where it writes, and the provenance it
records. Each result.json starts with `commit` (the code the figures came from, with
`+dirty` when code or inputs had uncommitted changes), `seed` (the seeds of its runs)
and `command` (what regenerates it); `studies/check.py` re-runs that command and
compares the outputs with the committed ones."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "studies" / "results"
# Options that choose where or how a study runs, never what it computes.
_PLACEMENT = ("--out", "--scheduler")


def study_parser(doc: str | None, quick: bool = True) -> argparse.ArgumentParser:
    """The options every study has: `--quick` (where the study has a quick size) and `--out`."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if quick:
        ap.add_argument("--quick", action="store_true", help="the smaller study that CI re-runs")
    ap.add_argument("--out", help="folder to write to (default: studies/results/<study>[_quick])")
    return ap


def output_dir(study: str, args: argparse.Namespace) -> Path:
    out = Path(args.out) if args.out else RESULTS / (f"{study}_quick" if getattr(args, "quick", False) else study)
    out.mkdir(parents=True, exist_ok=True)
    return out


def commit() -> str:
    """HEAD, marked `+dirty` when the code or the study inputs differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--", "python", "crates", "examples", "studies/*.py", "Cargo.lock"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if changed else "")


def command() -> str:
    """The command that ran, without the options that only place the outputs."""
    args, kept = sys.argv[1:], []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in _PLACEMENT:
            skip = True
        elif not a.startswith(tuple(p + "=" for p in _PLACEMENT)):
            kept.append(a)
    return " ".join(["python", f"studies/{Path(sys.argv[0]).name}", *kept])


def with_provenance(result: dict, seeds: Iterable[int]) -> dict:
    """`result` with its provenance first: commit, seeds, command."""
    return {"commit": commit(), "seed": list(seeds), "command": command(), **result}


def write_result(out: Path, result: dict, seeds: Iterable[int]) -> None:
    """result.json (provenance first), and the same JSON as the last line printed."""
    record = with_provenance(result, seeds)
    (out / "result.json").write_text(json.dumps(record, indent=2, default=float) + "\n")
    print(json.dumps(record, default=float))
