"""Damaged input reaches the user as one clear message naming the file, never a
traceback: every corruption of a trace, a profile or a measurement table, under every
command that reads it."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tierlab
from tierlab.cli import main
from tierlab.experiments.sizing import profile_grid

from conftest import EXAMPLES


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> dict[str, Path]:
    """A trace with records and a small profile, both valid."""
    root = tmp_path_factory.mktemp("good")
    model = tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_run(duration=60, warmup=10)
    tierlab.simulate(model).write(root / "trace")
    profile_grid(model, [5, 10], [2, 5], workers=1).write(root / "profile")
    return {"trace": root / "trace", "profile": root / "profile"}


def run_cli(capsys, *args: str | Path) -> tuple[int, str, str]:
    """`tierlab ARGS` through the entry point (its error handling included; the
    warning settings it makes end with it)."""
    import sys
    import warnings

    argv, sys.argv = sys.argv, ["tierlab", *map(str, args)]
    code = 0
    try:
        with warnings.catch_warnings():
            main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        sys.argv = argv
    o = capsys.readouterr()
    return code, o.out, o.err


def _summary(change: Callable[[dict], object]) -> Callable[[Path], None]:
    def corrupt(folder: Path) -> None:
        s = json.loads((folder / "summary.json").read_text())
        change(s)
        (folder / "summary.json").write_text(json.dumps(s))

    return corrupt


def _table(name: str, change: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[Path], None]:
    def corrupt(folder: Path) -> None:
        change(pd.read_parquet(folder / name)).to_parquet(folder / name, index=False)

    return corrupt


def _bytes(name: str, data: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_bytes(data((folder / name).read_bytes()))


def _nan_throughput(folder: Path) -> None:
    text = (folder / "summary.json").read_text()
    (folder / "summary.json").write_text(re.sub(r'"throughput": [0-9.e+-]+', '"throughput": NaN', text, count=1))


# corruption → a fragment of the message that must name the problem
TRACE_CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "summary truncated": (_bytes("summary.json", lambda b: b[: len(b) // 2]), "summary.json is not valid JSON"),
    "summary empty": (_bytes("summary.json", lambda b: b""), "summary.json is not valid JSON"),
    "summary binary": (_bytes("summary.json", lambda b: b"\x89PNG\r\n\x00\xff"), "summary.json is not valid JSON"),
    "summary a list": (_bytes("summary.json", lambda b: b"[1, 2]"), "summary.json: <top>"),
    "summary without tiers": (_summary(lambda s: s.pop("tiers")), "summary.json: tiers: Field required"),
    "summary throughput NaN": (_nan_throughput, "throughput: not a non-negative finite number"),
    "summary negative throughput": (_summary(lambda s: s.update(throughput=-3.0)), "summary.json: throughput: not a non-negative"),
    "summary negative count": (_summary(lambda s: s["requests"].update(ok=-5)), "summary.json: requests.ok: not a non-negative"),
    "summary negative pool": (
        _summary(lambda s: s["tiers"]["app"]["servers"][0]["pools"]["db"].update(mean_busy=-0.5)),
        "tiers.app.servers[0].pools.db.mean_busy: not a non-negative",
    ),
    "summary text for a number": (_summary(lambda s: s.update(measured_seconds="fifty")), "summary.json: measured_seconds"),
    "series truncated": (_bytes("timeseries.parquet", lambda b: b[: len(b) // 2]), "timeseries.parquet is not a readable Parquet file"),
    "series empty": (_bytes("timeseries.parquet", lambda b: b""), "timeseries.parquet is not a readable Parquet file"),
    "series garbage": (_bytes("timeseries.parquet", lambda b: b"PAR1garbagePAR1"), "timeseries.parquet is not a readable Parquet file"),
    "series without values": (_table("timeseries.parquet", lambda d: d.drop(columns="value")), "timeseries.parquet: missing columns value"),
    "series values as text": (_table("timeseries.parquet", lambda d: d.assign(value=d.value.astype(str))), "column value holds"),
    "series infinite value": (_table("timeseries.parquet", lambda d: d.assign(value=np.inf)), "column value, row 0: inf"),
    "series negative time": (_table("timeseries.parquet", lambda d: d.assign(t=-1.0 - d.t)), "column t, row 0: -1.0"),
    "series duplicated": (_table("timeseries.parquet", lambda d: pd.concat([d, d.iloc[:5]])), "timeseries.parquet: 5 duplicated"),
    "records truncated": (_bytes("requests.parquet", lambda b: b[: len(b) // 2]), "requests.parquet is not a readable Parquet file"),
    "records empty": (_bytes("requests.parquet", lambda b: b""), "requests.parquet is not a readable Parquet file"),
    "records garbage": (_bytes("requests.parquet", lambda b: b"\x00garbage"), "requests.parquet is not a readable Parquet file"),
    "records without status": (_table("requests.parquet", lambda d: d.drop(columns="status")), "requests.parquet: missing columns status"),
    "records times as text": (_table("requests.parquet", lambda d: d.assign(start=d.start.astype(str))), "column start holds"),
    "records NaN end": (_table("requests.parquet", lambda d: d.assign(end=np.nan)), "column end, row 0: nan"),
    "records negative response time": (_table("requests.parquet", lambda d: d.assign(response_time=-1.0)), "column response_time, row 0: -1.0"),
    "records unknown status": (_table("requests.parquet", lambda d: d.assign(status="weird")), "unknown value(s) 'weird'"),
    "records phase as text": (_table("requests.parquet", lambda d: d.assign(**{"app.wait_db": "slow"})), "column app.wait_db holds"),
}

TRACE_COMMANDS = {
    "profile": lambda t, p: ["analyze", "profile", t],
    "bottleneck": lambda t, p: ["analyze", "bottleneck", t],
    "fluctuations": lambda t, p: ["analyze", "fluctuations", t],
    "size optimize --trace": lambda t, p: ["size", "optimize", p, "--trace", t],
}


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("command", TRACE_COMMANDS)
@pytest.mark.parametrize("corruption", TRACE_CORRUPTIONS)
def test_a_damaged_trace_is_one_clear_error(good, tmp_path, capsys, corruption, command):
    corrupt, message = TRACE_CORRUPTIONS[corruption]
    trace = _copy(good["trace"], tmp_path / "trace")
    corrupt(trace)
    code, _, err = run_cli(capsys, *TRACE_COMMANDS[command](trace, good["profile"]))
    assert code == 2, err
    assert "Traceback" not in err and "TIERLAB_DEBUG" not in err
    assert str(trace) in err and message in err, err


def _points(change: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[Path], None]:
    return lambda folder: change(pd.read_csv(folder / "points.csv")).to_csv(folder / "points.csv", index=False)


PROFILE_CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "meta truncated": (_bytes("profile.json", lambda b: b[: len(b) // 2]), "profile.json is not valid JSON"),
    "meta empty": (_bytes("profile.json", lambda b: b""), "profile.json is not valid JSON"),
    "meta binary": (_bytes("profile.json", lambda b: b"\xff\xfe\x00"), "profile.json is not valid JSON"),
    "meta without L": (_bytes("profile.json", lambda b: json.dumps({k: v for k, v in json.loads(b).items() if k != "L"}).encode()), "missing key(s) L"),
    "meta L as text": (_bytes("profile.json", lambda b: json.dumps({**json.loads(b), "L": "many"}).encode()), "profile.json: a wrong value"),
    "points empty": (_bytes("points.csv", lambda b: b""), "points.csv is empty"),
    "points binary": (_bytes("points.csv", lambda b: b"\x89PNG\r\n\xff\xfe\x00"), "points.csv is not a text (UTF-8) CSV file"),
    "points without p": (_points(lambda d: d.drop(columns="p")), "points.csv: missing column(s) p"),
    "points ragged": (_bytes("points.csv", lambda b: b + b"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"), "points.csv: not a regular CSV table"),
    "runs empty": (_bytes("runs.csv", lambda b: b""), "runs.csv is empty"),
}


@pytest.mark.parametrize("corruption", PROFILE_CORRUPTIONS)
def test_a_damaged_profile_is_one_clear_error(good, tmp_path, capsys, corruption):
    corrupt, message = PROFILE_CORRUPTIONS[corruption]
    profile = _copy(good["profile"], tmp_path / "profile")
    corrupt(profile)
    code, _, err = run_cli(capsys, "size", "optimize", profile)
    assert code == 2, err
    assert "Traceback" not in err and "TIERLAB_DEBUG" not in err
    assert str(profile) in err and message in err, err


TABLES = {
    "empty": (b"", "is empty"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "is not a text (UTF-8) CSV file"),
    "UTF-16": ("clients,threads,value\n1,2,3\n".encode("utf-16"), "is not a text (UTF-8) CSV file"),
    "header only": (b"clients,threads,value\n", "0 measurements cannot fit"),
    "wrong columns": (b"x,y\n1,2\n", "missing column(s) clients, threads, value"),
    "ragged": (b"clients,threads,value\n1,2,3\n1,2,3,4,5\n", "not a regular CSV table"),
    "text for a number": (b"clients,threads,value\n1,2,3\n2,two,3\n", "line 3: threads = 'two'"),
    "NaN": (b"clients,threads,value\n1,2,nan\n", "line 2: value = nan; value must be a positive number"),
}


@pytest.mark.parametrize("table", TABLES)
def test_a_damaged_cost_table_is_one_clear_error(tmp_path, capsys, table):
    data, message = TABLES[table]
    path = tmp_path / "t.csv"
    path.write_bytes(data)
    code, _, err = run_cli(capsys, "cost", "fit", path)
    assert code == 2, err
    assert "Traceback" not in err and "TIERLAB_DEBUG" not in err
    assert str(path) in err and message in err, err


def _client_only(folder: Path) -> None:
    """What `tierlab load` writes: the client's view, no tiers."""
    _summary(lambda s: s.update(tiers={}))(folder)
    _table("requests.parquet", lambda d: d[[c for c in d.columns if "." not in c]])(folder)
    _table("timeseries.parquet", lambda d: d[d.tier == "app"].assign(tier="client"))(folder)


# Valid but empty for an analysis: it says why, in words.
EMPTY: dict[str, tuple[Callable[[Path], None], dict[str, str]]] = {
    "client only": (
        _client_only,
        {
            "profile": "a client-only trace (`tierlab load`) measures no server phases",
            "bottleneck": "the trace reports no stations or pools",
            "fluctuations": "no tiers in this trace",
        },
    ),
    "no records": (
        lambda folder: (folder / "requests.parquet").unlink(),
        {"profile": "the trace has no request records", "fluctuations": "rate_cov"},
    ),
    "nothing completed": (
        _table("requests.parquet", lambda d: d.iloc[:0]),
        {"profile": "the trace has no request records", "fluctuations": "a bimodality test needs at least 10"},
    ),
}


@pytest.mark.parametrize("command", ["profile", "bottleneck", "fluctuations"])
@pytest.mark.parametrize("case", EMPTY)
def test_an_empty_analysis_says_why(good, tmp_path, capsys, case, command):
    change, says = EMPTY[case]
    trace = _copy(good["trace"], tmp_path / "trace")
    change(trace)
    code, out, err = run_cli(capsys, "analyze", command, trace)
    assert code in (0, 2) and "Traceback" not in err and "TIERLAB_DEBUG" not in err
    assert "Empty DataFrame" not in out
    if command in says:
        assert says[command] in out + err
