"""Rewrite the claims tables of studies/README.md from the committed claims.json files.

    python studies/ledger.py           # rewrite the block between the markers
    python studies/ledger.py --check   # exit 1 if the README's block is out of date

Per paper, per study: the full study's ledger where it has been run, else the quick one
(the folder is named)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tierlab.experiments.study.claims import VERDICTS, check_file

# A script beside the studies (imported by the tests too): its own folder, not the running script's.
HERE = Path(__file__).resolve().parent
ROOT, RESULTS, README = HERE.parent, HERE / "results", HERE / "README.md"
START, END = "<!-- ledger:start (python studies/ledger.py) -->", "<!-- ledger:end -->"
# The papers, and the studies that score their claims, in the README's order. Only
# studies/results: the investigations (investigations/) reproduce no paper.
PAPERS = {
    "Andreolini, Colajanni & Lancellotti — technology trends (../shared/papers/andreolini-technology-trends.txt)": ["andreolini"],
    "Wang et al. — response-time fluctuations in RUBBoS (../shared/papers/wang-rubbos-response-time-fluctuations.txt)": ["wang"],
    "Totok & Karamcheti — resource pools (../shared/papers/totok-karamcheti-resource-pools.txt)": [
        "pool_sizing",
        "connection_caching",
        "live_sizing",
        "twin",
        "twin_java_budget",
        "validation_run_length",
    ],
    "Dutta et al. — ReDAL request distribution (../shared/papers/dutta-redal-request-distribution.txt)": [
        "cluster_dispatch",
        "cluster_live",
        "cluster_live_redis",
    ],
    "Chen & Gorton — contention cost model (../shared/papers/chen-gorton-contention-cost-model.txt)": ["cost_model"],
}


def ledger_folder(study: str) -> Path | None:
    """The full study's results when they have a ledger, else the quick study's."""
    for folder in (RESULTS / study, RESULTS / f"{study}_quick"):
        if (folder / "claims.json").exists():
            return folder
    return None


def cell(x: Any) -> str:
    """A figure as one table cell: mappings as `key: value`, lists with slashes."""
    if isinstance(x, dict):
        return ", ".join(f"{k}: {_nested(v)}" for k, v in x.items())
    if isinstance(x, list):
        return " / ".join(cell(v) for v in x)
    if x is None:
        return "—"
    return str(x).replace("|", "\\|")


def _nested(x: Any) -> str:
    return f"({cell(x)})" if isinstance(x, dict) else cell(x)


def summary() -> list[str]:
    """One row per study with a ledger: its claims counted by verdict, one column each."""
    rows = ["| paper | study | " + " | ".join(VERDICTS) + " |", "|---|---|" + "---:|" * len(VERDICTS)]
    for paper, studies in PAPERS.items():
        for study in studies:
            if (folder := ledger_folder(study)) is not None:
                claims = check_file(folder / "claims.json")
                counts = [str(sum(c["verdict"] == v for c in claims)) for v in VERDICTS]
                rows.append(f"| {paper.split(' — ')[0]} | `{folder.relative_to(RESULTS)}` | " + " | ".join(counts) + " |")
    return [*rows, ""]


def block() -> str:
    lines = [START, "", *summary()]
    for paper, studies in PAPERS.items():
        lines += [f"### {paper}", ""]
        for study in studies:
            folder = ledger_folder(study)
            if folder is None:
                lines += [f"#### {study}: no claims.json yet", ""]
                continue
            claims = check_file(folder / "claims.json")
            counts = ", ".join(f"{sum(c['verdict'] == v for c in claims)} {v}" for v in VERDICTS)
            lines += [f"#### {study} — `{folder.relative_to(ROOT)}/claims.json`: {counts}", ""]
            lines += ["| claim | paper | ours | criterion | verdict | note |", "|---|---|---|---|---|---|"]
            for c in claims:
                # A miss whose study names no mechanism says so (README: "How a claim is scored").
                note = c.get("note", "not diagnosed" if c["verdict"] == "not reproduced" else "")
                row = [c["claim"], c["paper"], c["ours"], c["criterion"], f"**{c['verdict']}**", note]
                lines.append("| " + " | ".join(cell(x) for x in row) + " |")
            lines.append("")
    return "\n".join([*lines, END])


def rewrite(text: str) -> str:
    """`text` with its ledger block replaced by the current one."""
    if START not in text or END not in text:
        raise SystemExit(f"{README}: the markers {START!r} and {END!r} are missing; put them where the tables go")
    head, rest = text.split(START, 1)
    return head + block() + rest.split(END, 1)[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if the README's tables are out of date instead of rewriting them")
    a = ap.parse_args()
    text = README.read_text()
    new = rewrite(text)
    if a.check:
        if new != text:
            print(f"{README}: the claims tables are out of date; run python studies/ledger.py", file=sys.stderr)
            sys.exit(1)
        return
    README.write_text(new)


if __name__ == "__main__":
    main()
