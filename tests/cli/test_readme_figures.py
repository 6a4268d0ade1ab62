"""The figures the README quotes are the ones its commands print today: the ramp of
`examples/tpcw_2tier.yaml` run as the README runs it (tests/live/test_readme.py runs
every command, shortened; this one runs the quoted ramp at full length)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from conftest import ROOT

QUOTE = re.compile(
    r"On `examples/tpcw_2tier.yaml` the knee\s+is at (?P<knee>[\d.]+) sessions/s \(p90 (?P<p90>[\d.]+) s; saturation at (?P<saturation>[\d.]+)\), "
    r"while the p90 reaches (?P<last_p90>[\d.]+) s at\s+the last step \((?P<last>[\d.]+) sessions/s\)"
)


def test_the_readme_quotes_the_ramp_it_prints():
    quoted = QUOTE.search((ROOT / "README.md").read_text())
    assert quoted, "the README's sentence on the ramp's knee changed: update QUOTE with it"
    out = subprocess.run(
        [sys.executable, "-m", "tierlab.cli", "ramp", str(ROOT / "examples" / "tpcw_2tier.yaml"), "--json", "-"], capture_output=True, text=True, check=True
    ).stdout
    ramp = json.loads(out)
    knee, last = ramp["knee"], ramp["steps"][-1]
    # Quoted to the digits the README gives: one decimal.
    printed = {"knee": knee["load"], "p90": knee["value"], "saturation": knee["saturation"], "last_p90": last["p90"], "last": last["load"]}
    assert {k: f"{v:.1f}" for k, v in printed.items()} == {k: f"{float(v):.1f}" for k, v in quoted.groupdict().items()}
