"""One trace schema: the Rust summary types and the Python view have the same fields,
and `read_trace` rejects a damaged trace by naming what is wrong."""

from __future__ import annotations

import copy
import json
import re

import pytest
from pydantic import TypeAdapter

import tierlab
from tierlab import _core
from tierlab.errors import TraceError
from tierlab.trace.schema import PHASES, SCHEMA_VERSION, Summary, check_summary

from conftest import EXAMPLES


def _paths(schema: dict) -> set[str]:
    """Every field of a JSON Schema as a dotted path (`*` for a map's values, `[]` for
    list items), nullable or not: pydantic's and schemars' output compare equal."""
    defs = schema.get("$defs", schema.get("definitions", {}))

    def resolve(node: dict) -> dict:
        while "$ref" in node:
            node = defs[node["$ref"].split("/")[-1]]
        return node

    def walk(node: dict, at: str) -> set[str]:
        node = resolve(node)
        for key in ("anyOf", "oneOf", "allOf"):
            if key in node:
                return set().union(*(walk(n, at) for n in node[key] if resolve(n).get("type") != "null"))
        if isinstance(node.get("type"), list):  # ["number", "null"]
            node = {**node, "type": next(t for t in node["type"] if t != "null")}
        out = {at} if at else set()
        for name, sub in node.get("properties", {}).items():
            out |= walk(sub, f"{at}.{name}" if at else name)
        if isinstance(node.get("additionalProperties"), dict):
            out |= walk(node["additionalProperties"], f"{at}.*")
        if "items" in node:
            out |= walk(node["items"], f"{at}[]")
        return out

    return walk(schema, "")


def test_the_python_view_has_the_fields_the_rust_summary_has():
    rust = _paths(json.loads(_core.summary_schema()))
    python = _paths(TypeAdapter(Summary).json_schema()) - {"model"}  # `model` is the name the Python side adds
    assert "tiers.*.servers[].pools.*.pinned" in rust
    assert rust == python, f"only in Rust: {sorted(rust - python)}; only in Python: {sorted(python - rust)}"
    assert _core.SCHEMA_VERSION == SCHEMA_VERSION and list(_core.PHASES) == PHASES


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trace")
    tierlab.simulate(EXAMPLES / "tpcw_2tier.yaml", duration=40, warmup=5).write(folder)
    return folder


def test_a_written_trace_reads_back_valid(written):
    t = tierlab.read_trace(written)
    pool = t.summary["tiers"]["app"]["servers"][0]["pools"]["db"]
    assert pool["kind"] == "connections" and pool["size"] == 15 and 0 <= pool["pinned"] <= 1
    assert t.summary["source"] == "simulation" and t.summary["elapsed"] is None


def _broken(summary: dict, change) -> dict:
    s = copy.deepcopy(summary)
    change(s)
    return s


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda s: s["tiers"]["app"]["servers"][0]["pools"]["db"].pop("size"), "tiers.app.servers[0].pools.db.size"),
        (lambda s: s["tiers"]["app"]["servers"][0]["pools"]["db"].update(waited="many"), "tiers.app.servers[0].pools.db.waited"),
        (lambda s: s["tiers"]["app"]["servers"][0]["stations"]["cpu"].update(utilisation=0.5), "tiers.app.servers[0].stations.cpu.utilisation"),
        (lambda s: s.pop("tiers"), "tiers"),
        (lambda s: s.update(source="guess"), "source"),
        (lambda s: s.update(throughput=float("nan")), "throughput"),
        (lambda s: s["response_time"].update(p99=float("inf")), "response_time.p99"),
    ],
)
def test_a_wrong_summary_names_its_first_wrong_field(written, change, field):
    good = json.loads((written / "summary.json").read_text())
    with pytest.raises(TraceError, match=re.escape(f"summary.json: {field}:")):
        check_summary(_broken(good, change))


def test_damaged_files_are_trace_errors(written, tmp_path):
    for name in ("summary.json", "timeseries.parquet", "requests.parquet"):
        copy_dir = tmp_path / name
        copy_dir.mkdir()
        for f in written.iterdir():
            (copy_dir / f.name).write_bytes(f.read_bytes())
        (copy_dir / name).write_bytes(b"\x00garbage")
        with pytest.raises(TraceError, match=name.replace(".", r"\.")):
            tierlab.read_trace(copy_dir)
