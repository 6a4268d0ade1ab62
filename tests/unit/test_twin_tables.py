"""`twin verify` and `twin calibrate` print no `nan` (issue 44 item 2): where a figure is
missing, the cell says what is missing."""

from __future__ import annotations

import io

import pandas as pd
from rich.console import Console

from tierlab.cli.twin import shown, verify_table


def rendered(table) -> str:
    console = Console(file=io.StringIO(), width=400)
    console.print(table)
    return console.file.getvalue()


def test_verify_table_says_what_is_missing():
    nan = float("nan")
    row = {"M": 4, "N": 2, "mix": "model", "load": 4.0, "speed.calibrated": 0.9, "speed.live": nan, "speed.machine": nan}
    row |= {"throughput.measured": 0.0, "throughput.predicted": 12.0, "throughput.error": nan}
    row |= {"rt_mean.measured": nan, "rt_mean.predicted": 0.01, "rt_mean.error": nan}
    text = rendered(verify_table(pd.DataFrame([row])))
    assert "nan" not in text.lower()
    for said in ("never 2+ in service", "no probe", "no error: measured 0", "none completed"):
        assert said in text


def test_shown():
    assert shown(0.5, ".2f", "—") == "0.50"
    assert shown(float("nan"), ".2f", "— (no windows)") == "— (no windows)"
    assert shown(float("inf"), ".2f", "—") == "—"
