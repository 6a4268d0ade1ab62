"""The fuzz campaign: models drawn by hypothesis — from the JSON schema `tierlab schema`
prints (hypothesis-jsonschema), and mutations of every example (wrong types, missing
fields, zero, negative, huge, inf, nan, booleans, dangling references) — each run in
a worker process with a time limit, so that a crash or a hang is counted, not suffered.
Every outcome must be a clean error (ModelError, InputError) or a run that finishes.

    python tests/fuzz_models.py --n 10000 [--seed S] [--keep DIR]

prints the count of each outcome: clean error, finite run, long run (stopped at the
wall-time budget while progressing: allowed), traceback, signal, hang. tests/cli/test_fuzz_models.py
runs a few hundred in CI."""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import json
import math
import multiprocessing as mp
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CAP = 3.0  # simulated seconds at most: run.duration is capped before mutating
BUDGET = 20.0  # wall seconds a run may take before it is stopped: a long run
TIMEOUT = BUDGET + 40.0  # wall seconds without an answer from the worker: a hang
SCHEMA_SHARE = 40
BAD = ("traceback", "signal", "hang")
OUTCOMES = ("clean error", "finite run", "long run", *BAD)
VALUES = [None, True, False, 0, -1, 0.5, 1e-9, 1e308, -1e308, math.inf, -math.inf, math.nan, 2**31, 2**32, 2**64, "x", "", [], {}, [1], {"a": 1}]


# ---- the models ----------------------------------------------------------------------


def _read(path: Path) -> Any:
    from tierlab.model import _Loader

    return yaml.load(path.read_text(), Loader=_Loader)


@functools.cache
def _examples() -> list[dict]:
    out = []
    for f in sorted(EXAMPLES.glob("*.yaml")):
        m = _read(f)
        if isinstance(m, dict) and "tiers" in m:  # not the HTTP mapping
            out.append({k: v for k, v in m.items() if not str(k).startswith("x-")})
    return out


def _cap(m: dict) -> None:
    """Short runs: at most CAP simulated seconds, a warm-up within them."""
    run = m.setdefault("run", {}) if isinstance(m, dict) else None
    if not isinstance(run, dict):
        return
    d = run.get("duration", 600.0)
    if isinstance(d, (int, float)) and not isinstance(d, bool) and d > CAP:
        run["duration"] = CAP
    w = run.get("warmup", 0.0)
    if isinstance(w, (int, float)) and not isinstance(w, bool) and w > CAP / 3:
        run["warmup"] = CAP / 3


def _spots(node: Any, out: list) -> list:
    """(container, key) for every value in the model."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in list(items):
        out.append((node, k))
        _spots(v, out)
    return out


@st.composite
def mutated_examples(draw) -> dict:
    """An example with one to three spots changed: a bad value, a deletion, a dangling
    reference (a name with a suffix), any float or integer."""
    m = copy.deepcopy(draw(st.sampled_from(_examples())))
    _cap(m)
    for _ in range(draw(st.integers(1, 3))):
        spots = _spots(m, [])
        if not spots:
            break
        node, key = draw(st.sampled_from(spots))
        how = draw(st.sampled_from(["value", "value", "number", "delete", "dangling"]))
        if how == "delete":
            del node[key]
        elif how == "dangling" and isinstance(node[key], str):
            node[key] += "_missing"
        elif how == "number":
            node[key] = draw(st.floats() | st.integers(min_value=-(2**70), max_value=2**70))
        else:
            node[key] = copy.deepcopy(draw(st.sampled_from(VALUES)))  # a copy: later mutations must not edit VALUES
    return m


NAMES = ["a", "b", "app", "db", "cpu", "threads"]  # shared by every name, so references often resolve
BLOCKS = {"Loop", "Use", "Transaction"}  # steps holding steps: slow to draw here, mutated from the examples


def _drawable(node: Any, defs: dict, stack: tuple = ()) -> Any:
    """The schema made quick to draw from: $refs inlined (a definition met again inside
    itself, and the blocks, become `false`), names drawn from NAMES
    instead of a pattern, at most 3 items or properties per collection."""
    if isinstance(node, list):
        return [_drawable(v, defs, stack) for v in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return False if name in stack or name in BLOCKS else _drawable(defs[name], defs, (*stack, name))
    # oneOf drawn as anyOf: the members exclude each other anyway, and checking that is slow.
    out = {
        "anyOf" if k == "oneOf" else k: _drawable(v, defs, stack)
        for k, v in node.items()
        if k not in ("$defs", "discriminator", "patternProperties", "pattern")
    }
    if "pattern" in node:
        out["enum"] = NAMES
    if node.get("title") == "RequestType" or "patternProperties" in node:
        (values,) = node["patternProperties"].values() if "patternProperties" in node else (node["additionalProperties"],)
        out.update(propertyNames={"enum": NAMES}, additionalProperties=_drawable(values, defs, stack))
    if out.get("type") == "object":
        out.setdefault("maxProperties", 3)
    if out.get("type") == "array":
        out.setdefault("maxItems", 3)
    return out


@functools.cache
def schema_models() -> st.SearchStrategy:
    from tierlab.model import json_schema

    schema = json_schema()
    flat = _drawable(schema, schema["$defs"])
    return from_schema(flat).map(lambda m: (_cap(m), m)[1])


def models() -> st.SearchStrategy:
    """Mostly mutated examples; one in SCHEMA_SHARE drawn from the schema (a draw from
    the whole model's schema takes seconds, a mutation milliseconds)."""
    return st.integers(1, SCHEMA_SHARE).flatmap(lambda i: schema_models() if i == 1 else mutated_examples())


# ---- running them --------------------------------------------------------------------


class _Budget(Exception):
    """The run outlasted BUDGET wall seconds while progressing."""


def _outcome(model: Any) -> tuple[str, str]:
    import warnings

    import tierlab
    from tierlab.errors import InputError, ModelError

    start = time.monotonic()

    def budget(_fraction: float) -> None:
        if time.monotonic() - start > BUDGET:
            raise _Budget

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tierlab.simulate(tierlab.load_model(model, base_dir=EXAMPLES), progress=budget)
    except (ModelError, InputError):
        return "clean error", ""
    except _Budget:
        return "long run", ""
    except BaseException as e:  # noqa: BLE001 — what the campaign looks for
        return "traceback", f"{type(e).__name__}: {e}"[:500]
    return "finite run", ""


def _serve(conn) -> None:
    import resource

    # The worker's address space, which the resource guard reads (model/limits.py): a
    # run it lets through fits; an allocation failing beyond it is a finding.
    limit = 8 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with contextlib.suppress(EOFError):  # the campaign was stopped
        while (model := conn.recv()) is not None:
            conn.send(_outcome(model))


class Worker:
    """A process that runs models one at a time; replaced when it dies or hangs."""

    def __init__(self):
        self.ctx = mp.get_context("spawn")
        self._start()

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()

    def run(self, model: Any) -> tuple[str, str]:
        self.conn.send(model)
        try:
            if self.conn.poll(TIMEOUT):
                return self.conn.recv()
            self.proc.kill()
            self.proc.join()
            result = ("hang", f"no answer in {TIMEOUT:.0f} s")
        except (EOFError, ConnectionError):
            self.proc.join()
            result = ("signal", f"worker exit code {self.proc.exitcode}")
        self._start()
        return result

    def close(self) -> None:
        self.conn.send(None)
        self.proc.join(10)


def campaign(n: int, seed_: int = 0, keep: Path | None = None, report=None) -> Counter:
    """Run `n` drawn models; the count of each outcome. Models with a bad outcome are
    written to `keep` (JSON) to reproduce."""
    counts: Counter = Counter()
    worker = Worker()
    if keep:
        keep.mkdir(parents=True, exist_ok=True)

    @seed(seed_)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(model=models())
    def one(model):
        outcome, detail = worker.run(model)
        counts[outcome] += 1
        if outcome in BAD:
            if keep:
                (keep / f"{outcome}-{sum(counts.values())}.json").write_text(json.dumps({"detail": detail, "model": model}, default=str))
            if report:
                report(f"{outcome}: {detail}")
        done = sum(counts.values())
        if report and done % 500 == 0:
            report(f"{done} models: " + ", ".join(f"{k} {counts[k]}" for k in OUTCOMES))

    try:
        one()
    finally:
        worker.close()
    return counts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1000, help="models to draw")
    p.add_argument("--seed", type=int, default=0, help="hypothesis seed (same seed, same models)")
    p.add_argument("--keep", type=Path, help="folder for the models with a bad outcome (JSON)")
    a = p.parse_args()
    t0 = time.monotonic()
    counts = campaign(a.n, a.seed, a.keep, report=lambda s: print(s, file=sys.stderr, flush=True))
    print(f"{sum(counts.values())} models in {time.monotonic() - t0:.0f} s (seed {a.seed})")
    for k in OUTCOMES:
        print(f"  {k:12} {counts[k]}")
    sys.exit(1 if any(counts[k] for k in BAD) else 0)


if __name__ == "__main__":
    main()
