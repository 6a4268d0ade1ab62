"""Imports that ended in an internal error or a huge allocation (issue 44, item 6):
one absurd time stamp, a number too large for its column, a field of the wrong kind.
Each is an InputError naming the file and the line; the table holds the importer, the
damaged input and a fragment of the message."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tierlab.errors import InputError
from tierlab.trace.imports import hlog, jmeter, k6, locust
from tierlab.trace.imports.timeline import MAX_WINDOWS

from conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "imports"


def k6_point(time: str = "2024-05-01T10:00:05.000Z", value: object = 12.5, tags: object = None) -> str:
    tags = {"name": "home", "status": "200", "expected_response": "true"} if tags is None else tags
    return json.dumps({"type": "Point", "metric": "http_req_duration", "data": {"time": time, "value": value, "tags": tags}})


K6 = [k6_point(f"2024-05-01T10:00:{i:02d}.000Z") for i in range(10)]
JMETER_HEADER = "timeStamp,elapsed,label,responseCode,responseMessage,success,bytes"
JMETER = [f"{1714557600000 + 100 * i},50,home,200,OK,true,1000" for i in range(10)]


def k6_file(odd: str) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        (folder / "r.json").write_text("\n".join([*K6[:5], odd, *K6[5:]]) + "\n")
        return folder / "r.json"

    return write


def jmeter_file(odd: str) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        (folder / "r.jtl").write_text("\n".join([JMETER_HEADER, *JMETER[:3], odd, *JMETER[3:]]) + "\n")
        return folder / "r.jtl"

    return write


def hlog_file(line: int, start: str) -> Callable[[Path], Path]:
    """The fixture's log with the interval on `line` starting at `start`."""

    def write(folder: Path) -> Path:
        lines = (FIXTURES / "run.hlog").read_text().splitlines()
        lines[line - 1] = start + "," + lines[line - 1].split(",", 1)[1]
        (folder / "r.hlog").write_text("\n".join(lines) + "\n")
        return folder / "r.hlog"

    return write


def locust_files(name: str, line: int, change: Callable[[str], str]) -> Callable[[Path], Path]:
    """The fixture's three files as PREFIX_*.csv, `line` of `name` changed."""

    def write(folder: Path) -> Path:
        for part in ("stats", "failures", "stats_history"):
            shutil.copy(FIXTURES / f"locust_{part}.csv", folder / f"run_{part}.csv")
        lines = (folder / f"run_{name}.csv").read_text().splitlines()
        lines[line - 1] = change(lines[line - 1])
        (folder / f"run_{name}.csv").write_text("\n".join(lines) + "\n")
        return folder / "run"

    return write


def _aggregated_line(n: int) -> int:
    lines = (FIXTURES / "locust_stats_history.csv").read_text().splitlines()
    return [i for i, text in enumerate(lines, 1) if ",Aggregated," in text][n]


READERS = {"k6": k6.read, "jmeter": jmeter.read, "hlog": hlog.read, "locust": locust.read}
CASES = {
    "k6 point dated 1900": ("k6", k6_file(k6_point("1900-01-01T00:00:00Z")), "r.json line 6: the request starts at 1899-12-31"),
    "k6 value 1e308": ("k6", k6_file(k6_point(value=1e308)), "r.json line 6: the request starts at"),
    "k6 value Infinity": ("k6", k6_file(k6_point().replace("12.5", "Infinity")), "r.json line 6: data.value = inf"),
    "k6 tags a list": ("k6", k6_file(k6_point(tags=["a", "b"])), "r.json line 6: data.tags is a list"),
    "k6 name a mapping": ("k6", k6_file(k6_point(tags={"name": {"a": 1}})), 'r.json line 6: data.tags.name = {"a": 1}'),
    "k6 status a number": ("k6", k6_file(k6_point(tags={"name": "home", "status": 200})), "r.json line 6: data.tags.status = 200"),
    "k6 time no time": ("k6", k6_file(k6_point(time="NaT")), "r.json line 6: data.time = 'NaT' is no time"),
    "jmeter timeStamp 12.5": ("jmeter", jmeter_file("12.5,50,home,200,OK,true,1000"), "r.jtl line 5: the request starts at 0.0125 s, 54."),
    "jmeter elapsed 1e308": ("jmeter", jmeter_file("1714557600500,1e308,home,200,OK,true,10"), "r.jtl line 5: the request ends at"),
    "jmeter bytes 1e308": ("jmeter", jmeter_file("1714557600500,50,home,200,OK,true,1e308"), "r.jtl line 5: bytes = '1e308'"),
    "jmeter elapsed inf": ("jmeter", jmeter_file("1714557600500,inf,home,200,OK,true,10"), "r.jtl line 5: elapsed = 'inf'"),
    "hlog start 1e15": ("hlog", hlog_file(7, "1e15"), "r.hlog line 7: the interval ends at 1e+15 s"),
    "hlog start 1e400": ("hlog", hlog_file(7, "1e400"), "r.hlog line 7: not a valid interval histogram"),
    "locust count 1e308": ("locust", locust_files("stats", 2, lambda t: t.replace(",266,", ",1e308,", 1)), "run_stats.csv line 2: Request Count = '1e308'"),
    "locust time stamp 1e15": (
        "locust",
        locust_files("stats_history", _aggregated_line(2), lambda t: "1000000000000000," + t.split(",", 1)[1]),
        f"run_stats_history.csv line {_aggregated_line(2)}: the history line ends at 1e+15 s",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_an_import_is_refused_naming_the_line(tmp_path, case):
    tool, write, fragment = CASES[case]
    with pytest.raises(InputError) as e:
        READERS[tool](write(tmp_path))
    assert fragment in str(e.value), str(e.value)


def test_a_long_run_fits_with_a_wider_window(tmp_path):
    """Two requests 2·10⁵ s apart: 2·10⁶ windows of 0.1 s are refused, 2·10⁵ of 1 s not."""
    lines = [JMETER_HEADER, JMETER[0], f"{1714557600000 + 200_000_000},50,home,200,OK,true,1000"]
    (tmp_path / "r.jtl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=f"more than {MAX_WINDOWS:,} windows of 0.1 s.*wider --window"):
        jmeter.read(tmp_path / "r.jtl", window=0.1)
    assert jmeter.read(tmp_path / "r.jtl", window=1.0).summary["requests"]["ok"] == 2


@pytest.mark.parametrize("tool", ["k6", "jmeter", "hlog"])
def test_the_untouched_inputs_import(tmp_path, tool):
    write = {"k6": k6_file(K6[0]), "jmeter": jmeter_file(JMETER[0]), "hlog": hlog_file(7, "3.000000")}[tool]
    assert READERS[tool](write(tmp_path)).summary["requests"]["ok"] > 0
