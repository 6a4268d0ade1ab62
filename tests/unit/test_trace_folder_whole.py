"""A trace folder holds one run (issue 44, item 6): it is written whole or refused, and
read back only if every file of it is a file and every request one row."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

import tierlab
from tierlab.errors import InputError, TraceError
from tierlab.trace import read_trace

from conftest import EXAMPLES


@pytest.fixture(scope="module")
def runs() -> tuple[tierlab.Trace, tierlab.Trace]:
    """A run with records, and another seed's without."""
    model = EXAMPLES / "tpcw_2tier.yaml"
    return tierlab.simulate(model, duration=20, warmup=2), tierlab.simulate(model, duration=20, warmup=2, seed=2, records=False)


def test_a_folder_holding_a_trace_is_refused(tmp_path, runs):
    with_records, without = runs
    with_records.write(tmp_path)
    before = {f.name: f.stat().st_mtime_ns for f in tmp_path.iterdir()}
    with pytest.raises(InputError, match=r"already holds a trace \(summary.json, timeseries.parquet, requests.parquet\).*--force"):
        without.write(tmp_path)
    assert {f.name: f.stat().st_mtime_ns for f in tmp_path.iterdir()} == before


def test_force_replaces_the_trace_whole(tmp_path, runs):
    """The old run's requests.parquet does not stay beside the new run's summary."""
    with_records, without = runs
    with_records.write(tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    without.write(tmp_path, force=True)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["notes.txt", "summary.json", "timeseries.parquet"]
    assert read_trace(tmp_path).requests is None and read_trace(tmp_path).summary["seed"] == 2


def test_a_file_is_no_trace_folder(tmp_path, runs):
    (tmp_path / "f").write_text("")
    with pytest.raises(InputError, match="is a file"):
        runs[0].write(tmp_path / "f")


def _duplicated(folder: Path) -> None:
    r = pd.read_parquet(folder / "requests.parquet")
    pd.concat([r, r.iloc[:5]]).to_parquet(folder / "requests.parquet")


def _folder(folder: Path) -> None:
    (folder / "requests.parquet").unlink()
    (folder / "requests.parquet").mkdir()


def _loop(folder: Path) -> None:
    (folder / "requests.parquet").unlink()
    os.symlink("requests.parquet", folder / "requests.parquet")


def _dangling(folder: Path) -> None:
    (folder / "requests.parquet").unlink()
    os.symlink("elsewhere.parquet", folder / "requests.parquet")


@pytest.mark.parametrize(
    "damage,fragment",
    [
        (_duplicated, "requests.parquet: 5 rows repeat a request id"),
        (_folder, "requests.parquet is a folder"),
        (_loop, "requests.parquet is a link to nothing (or a loop of links)"),
        (_dangling, "requests.parquet is a link to nothing"),
    ],
)
def test_a_damaged_requests_table_is_an_error_not_no_records(tmp_path, runs, damage, fragment):
    runs[0].write(tmp_path)
    damage(tmp_path)
    with pytest.raises(TraceError) as e:
        read_trace(tmp_path)
    assert fragment in str(e.value) and str(tmp_path) in str(e.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
@pytest.mark.parametrize("name", ["requests.parquet", "summary.json"])
def test_an_unreadable_file_is_an_error(tmp_path, runs, name):
    runs[0].write(tmp_path)
    (tmp_path / name).chmod(0)
    with pytest.raises(TraceError, match=name):
        read_trace(tmp_path)


def test_a_summary_of_texts_is_an_error(tmp_path, runs):
    """Figures written as texts ("20.0") passed the summary's check, then failed as a TypeError."""
    import json

    runs[0].write(tmp_path)
    text = json.loads((tmp_path / "summary.json").read_text(), parse_float=str, parse_int=str)
    (tmp_path / "summary.json").write_text(json.dumps(text))
    with pytest.raises(TraceError, match=r"summary.json: schema_version: Input should be a valid integer"):
        read_trace(tmp_path)


def test_a_summary_that_cannot_be_read_is_an_error(tmp_path, runs, monkeypatch):
    """As for a summary.json without read permission (which root, running the tests
    here, would read all the same): the OSError becomes a TraceError naming it."""
    runs[0].write(tmp_path)
    real = Path.read_text

    def denied(self: Path, *args, **kwargs) -> str:
        if self.name == "summary.json":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", denied)
    with pytest.raises(TraceError, match=r"cannot read .*summary.json: Permission denied"):
        read_trace(tmp_path)
