"""The claims ledgers: strict criteria, well-formed claims.json files, and a README whose
tables are the ones studies/ledger.py generates from them."""

from __future__ import annotations

import json
import runpy

import pytest

from tierlab.experiments.study import claims
from tierlab.experiments.study.claims import Ledger, close, decreasing

from conftest import ROOT

# studies/ledger.py is a script; its functions read without running it.
ledger = runpy.run_path(str(ROOT / "studies" / "ledger.py"))

CLAIMS_FILES = sorted((ROOT / "studies" / "results").glob("*/claims.json"))


def test_the_ledger_computes_the_verdict_and_keeps_a_miss_note_only_on_a_miss(tmp_path):
    book = Ledger()
    assert not book.check("flat thresholds", [5000, 4800], [4200, 4200], decreasing(), "transient events too weak")
    assert book.check("a knee", 180, 200.0, close(0.15), "never shown")
    book.input("a calibrated knee", 330, 400.0, close(0.15), "CPU demand set for it")
    book.write(tmp_path)
    written = json.loads((tmp_path / "claims.json").read_text())
    assert [c["verdict"] for c in written] == ["not reproduced", "reproduced", "input"]
    assert written[0]["note"] == "transient events too weak"
    assert "note" not in written[1]
    assert written[2]["note"] == "CPU demand set for it; the calibration no longer holds (within ±15% of the paper)"
    assert claims.check_file(tmp_path / "claims.json") == written


@pytest.mark.parametrize("path", CLAIMS_FILES, ids=[p.parent.name for p in CLAIMS_FILES])
def test_every_committed_ledger_is_well_formed(path):
    for c in claims.check_file(path):  # exactly the keys, a known verdict
        if c["verdict"] == "input":
            assert c.get("note"), f"{path}: an input claim says what was calibrated"


def test_every_study_with_a_ledger_has_one_committed():
    assert {p.parent.name.removesuffix("_quick") for p in CLAIMS_FILES} >= {s for studies in ledger["PAPERS"].values() for s in studies}


def test_the_readme_tables_are_the_generated_ones():
    assert ledger["README"].read_text() == ledger["rewrite"](ledger["README"].read_text()), "run python studies/ledger.py"


RESULTS_FILES = sorted([*(ROOT / "studies" / "results").glob("*/result.json"), *(ROOT / "investigations").glob("*/results/*/result.json")])


@pytest.mark.parametrize("path", RESULTS_FILES, ids=[str(p.parent.relative_to(ROOT)) for p in RESULTS_FILES])
def test_every_committed_result_starts_with_its_provenance(path):
    """commit, seed and command first (tierlab.experiments.study.provenance), and the
    command names a script that exists, so check.py or a reader can regenerate it."""
    record = json.loads(path.read_text())
    assert list(record)[:3] == ["commit", "seed", "command"]
    script = record["command"].split()[1]
    assert (ROOT / script).is_file(), f"{path}: its command names {script}, which is not in the repository"


def test_every_study_folder_has_its_ledger():
    folders = {p.parent.name for p in (ROOT / "studies" / "results").glob("*/result.json")}
    assert sorted(f for f in folders if not (ROOT / "studies" / "results" / f / "claims.json").exists()) == []


MODEL_FILES = sorted(p for d in ("studies/results", "investigations/twin/results") for p in (ROOT / d).rglob("twin.yaml"))


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_twin_loads_where_it_is(path):
    """A twin a study wrote outside the tree and copied in names its chain relative to
    where it was written: committed, it must load from where it is (as `control.py --twin`
    and `size optimize` read it)."""
    from tierlab.model import load_model

    assert load_model(path).spec.tiers
