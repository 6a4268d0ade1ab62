"""What a command prints: numbers rounded to what they mean (never `1716.0` or
`saturated 1.0`), a ramp's `saturated` rows agreeing with its knee line, the USL's σ at
its bound printed as 0, and `tierlab --help` giving each command's description whole."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from rich.console import Console

from tierlab.analysis.usl import fit, throughput
from tierlab.cli import COMMANDS, cli
from tierlab.cli.usl import describe
from tierlab.experiments.ramp import ramp_of_traces
from tierlab.report.numbers import figure
from tierlab.report.summary import frame_table
from tierlab.trace.imports import k6

from conftest import ROOT

RAMP_VUS = [1, 2, 4, 6, 8, 10, 14]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (1716.0, "1,716"),
        (1716.4, "1,716"),
        (np.int64(12345), "12,345"),
        (52.345, "52.3"),
        (0.041345, "0.0413"),
        (0.1, "0.1"),
        (36.04, "36"),
        (3.2e-05, "3.2e-05"),
        (0.0, "0"),
        (-0.0, "0"),
        (True, "yes"),
        (np.bool_(False), "no"),
        (None, "—"),
        (float("nan"), "—"),
        ("db.sockets", "db.sockets"),
    ],
)
def test_a_figure_is_rounded_to_what_it_means(value, shown):
    assert figure(value) == shown


def test_a_frame_prints_whole_numbers_and_flags_as_people_read_them():
    console = Console(width=200, record=True)
    console.print(frame_table("t", pd.DataFrame({"load": [1716.0], "saturated": [True], "p90 (ms)": [36.04], "bottleneck": ["db.cpu"]})))
    text = console.export_text()
    assert "1,716" in text and "yes" in text and "36 " in text
    assert "1716.0" not in text and "True" not in text


def test_saturated_rows_agree_with_the_knee_line():
    runs = [k6.read(ROOT / "tests" / "fixtures" / "imports" / "k6_ramp" / f"vus{v}.json.gz") for v in RAMP_VUS]
    table, knee, usl = ramp_of_traces(runs, RAMP_VUS)
    assert knee.saturation == 8 and knee.load == 6
    assert table.saturated.tolist() == [v >= knee.saturation for v in RAMP_VUS]
    # The fit left σ 5.9e-18 above its bound: it is the bound, and prints as such.
    assert usl is not None and usl.sigma == 0.0
    assert describe(usl).startswith("USL: σ = 0 [")


def test_a_ramp_still_rising_at_its_last_step_saturates_nowhere():
    """The last step is within 2% of the highest throughput when it is the highest:
    nothing after it shows the throughput level off, so no row says saturated."""
    vus = RAMP_VUS[:4]  # 16, 32, 64, 91 req/s
    runs = [k6.read(ROOT / "tests" / "fixtures" / "imports" / "k6_ramp" / f"vus{v}.json.gz") for v in vus]
    table, knee, _ = ramp_of_traces(runs, vus)
    assert knee.saturation is None and not table.saturated.any()
    assert "still rises at the last step" in knee.method


def test_a_parameter_a_rounding_error_above_its_bound_is_the_bound():
    n = np.array([1, 2, 4, 8, 12, 16, 24, 32], float)
    u = fit(n, throughput(n, 0.0, 0.002, 100.0))
    assert u.sigma == 0.0 and u.kappa == pytest.approx(0.002, rel=1e-6)
    u = fit(n, throughput(n, 0.05, 0.0, 100.0))
    assert u.kappa == 0.0 and u.n_star is None


@pytest.mark.parametrize("group", [[], *([name] for name in ("analyze", "size", "cost", "live", "twin", "usl", "import"))])
def test_help_gives_each_command_its_description_whole(group):
    text = CliRunner().invoke(cli, [*group, "--help"], terminal_width=80).output
    listed = text.split("Commands:\n", 1)[1]
    assert "..." not in listed, listed
    if not group:
        assert "ramp      Black-box capacity: a load ramp and the knee of its p90 response\n" in listed
        assert sorted(line.split()[0] for line in listed.splitlines() if line.startswith("  ") and not line.startswith("   ")) == sorted(COMMANDS)


def test_each_type_shows_its_own_failures():
    """JMeter's "Missing page" failed 45 times: its row says so (it showed ok 0,
    rejected 0, the 45 errors only in the headline)."""
    from tierlab.report.summary import print_summary
    from tierlab.trace.imports import jmeter

    console = Console(width=300, record=True)
    print_summary(jmeter.read(ROOT / "tests" / "fixtures" / "imports" / "jmeter_results.jtl"), console)
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:7]] for line in console.export_text().splitlines() if line.count("│") > 8}
    assert rows["Missing page"] == ["0", "0", "0", "45", "0"]  # ok, rejected, timeout, error, unfinished
    assert rows["Home"][:4] == ["45", "0", "0", "0"]
