"""What every study and investigation shares: its command line, where it writes, and the
provenance it records. Each result.json starts with `commit` (the code the figures came
from, with `+dirty` when code or inputs had uncommitted changes), `seed` (the seeds of
its runs), `command` (what regenerates it) and `versions` (the interpreter's and the
numerical packages'); `studies/check.py` re-runs that command and compares the outputs
with the committed ones.

The scripts live in the repository (studies/, investigations/<topic>/), not in the
package: the repository is the folder above the running script that holds
`pyproject.toml` or `.git`, and a script writes to `results/` beside itself."""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from types import TracebackType

from ..._signals import stop_on_sigterm

# Options that choose where or how a study runs, never what it computes.
_PLACEMENT = ("--out", "--scheduler")
# The packages whose last bits a figure can depend on, recorded with every result.
NUMERICAL = ("numpy", "scipy", "pandas", "pyarrow")
# Where the code and the inputs a result depends on live, for `+dirty`.
_TRACKED = ("python", "crates", "examples", "studies/*.py", "investigations/*.py", "Cargo.lock")


def script() -> Path:
    """The running study's script (absolute)."""
    return Path(sys.argv[0]).resolve()


def root() -> Path:
    """The repository the running script is in: the nearest folder above it holding
    `pyproject.toml` or `.git`."""
    here = script()
    for folder in here.parents:
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    raise SystemExit(f"{here} is not inside the tierlab repository (no pyproject.toml or .git above it): run the study from its checkout")


def results() -> Path:
    """`results/` beside the running script: studies/results, investigations/<topic>/results."""
    return script().parent / "results"


def study_parser(doc: str | None, quick: bool = True) -> argparse.ArgumentParser:
    """The options every study has: `--quick` (where the study has a quick size) and `--out`.
    Every study builds its parser here, so here too SIGTERM is made to stop it as Ctrl-C
    does (a live study's testbed is torn down instead of left serving), and a stop ends
    the study with one line instead of a traceback."""
    stop_on_sigterm()
    sys.excepthook = interrupted
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if quick:
        ap.add_argument("--quick", action="store_true", help="the smaller study that CI re-runs")
    ap.add_argument("--out", help="folder to write to (default: results/<study>[_quick] beside the script)")
    return ap


def interrupted(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
    """A study's uncaught exception as Python prints it, except a stop (Ctrl-C, SIGTERM:
    KeyboardInterrupt, however deep in a run): one line saying what stopped which study.
    The exit status stays a stop's (130), Python's for an unhandled KeyboardInterrupt."""
    if not issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, error, tb)
        return
    chain: list[BaseException] = []
    e: BaseException | None = error
    while e is not None:
        chain.append(e)
        e = e.__cause__ or e.__context__
    how = next((str(e.args[0]) for e in chain if e.args and str(e.args[0]).startswith("SIG")), "Ctrl-C")
    print(f"{script().name}: stopped by {how}; what it had written stays in its output folder", file=sys.stderr)


def output_dir(study: str, args: argparse.Namespace) -> Path:
    out = Path(args.out) if args.out else results() / (f"{study}_quick" if getattr(args, "quick", False) else study)
    out.mkdir(parents=True, exist_ok=True)
    return out


def commit() -> str:
    """HEAD, marked `+dirty` when the code or the study inputs differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root(), capture_output=True, text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--", *_TRACKED], cwd=root(), capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if changed else "")


def command() -> str:
    """The command that ran (the script relative to the repository), without the options
    that only place the outputs."""
    args, kept = sys.argv[1:], []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in _PLACEMENT:
            skip = True
        elif not a.startswith(tuple(p + "=" for p in _PLACEMENT)):
            kept.append(a)
    return " ".join(["python", script().relative_to(root()).as_posix(), *kept])


def versions() -> dict[str, str]:
    """The interpreter's version and the numerical packages' (those installed)."""
    found = {"python": platform.python_version()}
    for name in NUMERICAL:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def with_provenance(result: dict, seeds: Iterable[int]) -> dict:
    """`result` with its provenance first: commit, seeds, command, versions."""
    return {"commit": commit(), "seed": list(seeds), "command": command(), "versions": versions(), **result}


def write_result(out: Path, result: dict, seeds: Iterable[int]) -> None:
    """result.json (provenance first), and the same JSON as the last line printed."""
    record = with_provenance(result, seeds)
    (out / "result.json").write_text(json.dumps(record, indent=2, default=float) + "\n")
    print(json.dumps(record, default=float))
