"""Inputs that used to be taken silently, or that ended in an internal error (issue
44, item 6): each is refused with a message naming the file and the line, key or
field. One table per kind of input: the input and a fragment the message must hold."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tierlab
from tierlab.live.mapping import load_mapping

from conftest import MAPPING

MODEL = """\
run: {duration: 5, seed: 1}
tiers:
  app:
    pools: {threads: {kind: threads, size: 20}}
    stations: {cpu: {kind: cpu}}
requests:
  A:
    app: [{acquire: threads}, {cpu: 0.01}, {release: threads}]
  B:
    app: [{cpu: 0.01}]
workload:
  population: {clients: 2}
  think: 1.0
  chain: {csv: chain.csv, start: A}
"""
CHAIN = "from,A,B,END_OF_SESSION\nA,0.5,0.4,0.1\nB,0.6,0.3,0.1\n"


def nested_loops(depth: int) -> str:
    steps = "{cpu: 0.01}"
    for _ in range(depth):
        steps = f"{{loop: {{count: 1, steps: [{steps}]}}}}"
    return MODEL.replace("[{acquire: threads}, {cpu: 0.01}, {release: threads}]", f"[{steps}]")


MODEL_CASES = {
    "a key twice": (MODEL.replace("size: 20}", "size: 20, size: 1}"), ["line 4", "'size' twice"]),
    "population twice": (MODEL.replace("  think: 1.0", "  population: {session_rate: 3}\n  think: 1.0"), ["line 13", "'population' twice"]),
    "loops nested 200 deep": (nested_loops(200), ["nested more than 64 levels", "line 8"]),
    "loops nested 100 deep": (nested_loops(100), ["nested more than 64 levels", "line 8"]),
    "lists nested 5000 deep": ("a: " + "[" * 5000 + "]" * 5000 + "\n", ["nested more than 64 levels", "line 1"]),
}
CHAIN_CASES = {
    "a row twice": (CHAIN + "A,0.1,0.8,0.1\n", ["chain.csv line 4", "'A' is given twice (first on line 2)"]),
    "a column twice": ("from,A,B,B,END_OF_SESSION\nA,0.5,0.2,0.2,0.1\nB,0.6,0.2,0.1,0.1\n", ["chain.csv line 1", "'B' given twice"]),
    "nan": (CHAIN.replace("0.3", "nan"), ["chain.csv line 3, column 'B'", "nan is not a probability"]),
    "infinite": (CHAIN.replace("0.3", "inf"), ["chain.csv line 3, column 'B'", "inf is not a probability"]),
    "negative": (CHAIN.replace("0.3", "-0.3"), ["chain.csv line 3, column 'B'", "-0.3 is not a probability"]),
    "binary": (b"\x89PNG\r\n\x1a\n\x00", ["chain.csv", "not a text (UTF-8) file: byte 0"]),
}


def refused(folder: Path, model: str, chain: str | bytes = CHAIN) -> str:
    (folder / "chain.csv").write_bytes(chain if isinstance(chain, bytes) else chain.encode())
    (folder / "m.yaml").write_text(model)
    with pytest.raises(tierlab.ModelError) as e:
        tierlab.load_model(folder / "m.yaml").engine()
    assert str(folder / "m.yaml") in str(e.value)
    return str(e.value)


def test_the_base_model_runs(tmp_path):
    (tmp_path / "chain.csv").write_text(CHAIN)
    (tmp_path / "m.yaml").write_text(MODEL)
    assert tierlab.simulate(tmp_path / "m.yaml").summary["requests"]["ok"] > 0


@pytest.mark.parametrize("case", MODEL_CASES)
def test_a_model_file_is_refused(tmp_path, case):
    text, fragments = MODEL_CASES[case]
    msg = refused(tmp_path, text)
    assert all(f in msg for f in fragments), msg


@pytest.mark.parametrize("case", CHAIN_CASES)
def test_a_chain_csv_is_refused(tmp_path, case):
    chain, fragments = CHAIN_CASES[case]
    msg = refused(tmp_path, MODEL, chain)
    assert "workload.chain.csv" in msg and all(f in msg for f in fragments), msg


def test_merged_anchors_may_be_overridden(tmp_path):
    """`<<: *x` then a key of x is an override, not a key given twice."""
    text = "x-pool: &pool {kind: threads, size: 4}\n" + MODEL.replace("{threads: {kind: threads, size: 20}}", "{threads: {<<: *pool, size: 20}}")
    (tmp_path / "chain.csv").write_text(CHAIN)
    (tmp_path / "m.yaml").write_text(text)
    assert tierlab.load_model(tmp_path / "m.yaml").spec.tiers["app"].pools["threads"].size == 20


@pytest.mark.parametrize(
    "data,fragment",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not a text (UTF-8) file: byte 0"),
        ("name: caf\xe9\n".encode("latin-1"), "not a text (UTF-8) file: byte 9"),
    ],
)
def test_a_binary_model_file_is_refused(tmp_path, data, fragment):
    (tmp_path / "m.yaml").write_bytes(data)
    with pytest.raises(tierlab.ModelError, match="m.yaml") as e:
        tierlab.load_model(tmp_path / "m.yaml")
    assert fragment in str(e.value)


def test_an_unreadable_model_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / "m.yaml").write_text(MODEL)
    (tmp_path / "m.yaml").chmod(0)
    if os.geteuid() == 0:  # root reads it all the same: the error it would meet, raised in its place

        def denied(self: Path, *args, **kwargs) -> str:
            raise PermissionError(13, "Permission denied", str(self))

        monkeypatch.setattr(Path, "read_text", denied)
    with pytest.raises(tierlab.ModelError, match="cannot read the file: Permission denied"):
        tierlab.load_model(tmp_path / "m.yaml")


def test_a_deep_model_given_in_python_is_refused():
    deep: dict = {}
    node = deep
    for _ in range(3000):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(tierlab.ModelError, match="nested more than 64 levels"):
        tierlab.load_model({"name": "deep", "x": deep})


def test_an_http_mapping_with_a_key_twice_is_refused(tmp_path):
    text = MAPPING.read_text()
    first = next(line for line in text.splitlines() if line.startswith("  ") and ":" in line and not line.strip().startswith("#"))
    (tmp_path / "http.yaml").write_text(text.replace(first, first + "\n" + first, 1))
    with pytest.raises(tierlab.ModelError, match=r"http.yaml[\s\S]*twice"):
        load_mapping(tmp_path / "http.yaml")


@pytest.mark.parametrize(
    "n,x,fragment",
    [
        ([1, 2, 4, 8, 16], [10, 19, 35, 60, 1e308], "throughput = 1e+308 (point 5: concurrency 16) is beyond 1e+12"),
        ([1, 2, 4, 8, 1e200], [10, 19, 35, 60, 80], "concurrency = 1e+200 (point 5: concurrency 1e+200) is beyond 1e+09"),
    ],
)
def test_the_usl_fit_refuses_a_figure_no_measurement_has(n, x, fragment):
    """Beyond them N(N − 1) and λ₁N overflow: 1e308 ended in "Residuals are not finite"."""
    from tierlab.analysis.usl import fit

    with pytest.raises(tierlab.InputError) as e:
        fit(n, x)
    assert fragment in str(e.value)


def test_a_profile_file_that_is_a_folder_is_refused(tmp_path):
    """The JSON and CSV files of profiles and tables: an unreadable one (here a folder)
    names itself rather than raising an OSError."""
    from tierlab.analysis.tables import read_json

    (tmp_path / "profile.json").mkdir()
    with pytest.raises(tierlab.InputError, match=r"cannot read .*profile.json: Is a directory"):
        read_json(tmp_path / "profile.json", ("L",))


def test_empirical_weights_near_the_largest_float_keep_their_shares():
    """Two weights of 1e308 summed to infinity: every share was NaN, and the model ran."""
    from tierlab.model.dist import Empirical

    e = Empirical.model_validate({"empirical": {"values": [0.01, 0.03], "weights": [1e308, 1e308]}})
    assert e.engine()["cumulative"] == [0.5, 1.0] and e.mean() == pytest.approx(0.02)


@pytest.mark.parametrize("normalize,expected", [(True, [1 / 3, 1 / 3, 1 / 3]), (False, None)])
def test_a_chain_row_of_huge_weights(normalize, expected):
    """Normalized, a row of 1e308s is three thirds (it was a row of zeros: its sum is
    infinite); not normalized, it is refused as summing to inf."""
    from tierlab.model.chain import read_chain
    from tierlab.model.spec import Chain

    chain = Chain(start="A", normalize=normalize, matrix={"A": {"A": 1e308, "B": 1e308, "END_OF_SESSION": 1e308}, "B": {"A": 1.0}})
    data, problems = read_chain(chain, Path("."))
    if expected is None:
        assert problems == [("workload.chain row 'A'", "probabilities sum to inf, not 1; fix the row or set `normalize: true` to rescale it")]
    else:
        assert data is not None and data.matrix[0].tolist() == pytest.approx(expected) and problems == []
