"""Shared by the twin's calibration tests on simulated traces (tests/unit/test_twin_lock.py,
test_twin_once.py): a model whose demands are known — two request types, the app's CPU
step then its calls to a database tier — and its traces at several loads."""

from __future__ import annotations

from pathlib import Path

import tierlab

CV = 0.5  # every known demand is lognormal with sd = CV × mean
KNOWN = {"browse": {"app": 0.004, "calls": 3, "db": 0.0005}, "buy": {"app": 0.002, "calls": 1, "db": 0.001}}


def lognormal(mean: float) -> dict:
    return {"lognormal": {"mean": mean, "sd": CV * mean}}


def known(cores: int, lock: dict | None = None) -> tierlab.LoadedModel:
    """Two types, 10 ms think times, 8 threads and 4 connections; the app's CPU step,
    then its calls to the database (each a use of a connection, whose taking costs 0.2
    ms of app CPU); the app station of `cores`, under `lock` if given."""
    requests = {}
    for name, k in KNOWN.items():
        access = {"use": {"pool": "db", "steps": [{"call": "db"}]}}
        steps = [{"acquire": "threads"}, {"cpu": lognormal(k["app"])}, {"loop": {"count": k["calls"], "steps": [access]}}, {"release": "threads"}]
        requests[name] = {"app": steps, "db": [{"cpu": lognormal(k["db"])}]}
    app: dict = {
        "pools": {"threads": {"kind": "threads", "size": 8}, "db": {"kind": "connections", "size": 4, "acquire_cpu": {"exponential": 0.0002}}},
        "stations": {"cpu": {"kind": "cpu", "cores": cores}},
    } | ({"interpreter_lock": lock} if lock else {})
    half = {t: 0.5 for t in KNOWN}
    return tierlab.load_model(
        {
            "name": "locked" if lock else "free",
            "run": {"duration": 40, "warmup": 5, "seed": 3, "records": True},
            "tiers": {"app": app, "db": {"stations": {"cpu": {"kind": "cpu", "cores": 2}}}},
            "requests": requests,
            "workload": {"population": {"clients": 3}, "think": {"exponential": 0.01}, "chain": {"matrix": {t: half for t in KNOWN}, "start": "browse"}},
        }
    )


def traces(m: tierlab.LoadedModel, folder: Path, loads: tuple[int, ...]) -> list[Path]:
    """`m` simulated at each load (closed clients), written under `folder`."""
    return [tierlab.simulate(m.with_changes({"workload.population.clients": n})).write(folder / f"at{n}") for n in loads]
