"""`tierlab control` beside a running testbed (docs/control.md): the Rust controller fed
the live server's intervals, read through its admin endpoint while a load runs; a dry
run only recommends, a real one re-sizes within the bounds, every decision logged in the
trace's shape, and the load's own observation undisturbed."""

from __future__ import annotations

import _thread
import signal
import threading
import time
import urllib.request

import pytest

from tierlab.experiments.control import control_loop, read_log
from tierlab.live.lifecycle import free_ports

from conftest import HTTP, live_model, running_testbed


def test_the_controller_recommends_then_resizes_the_live_server_within_bounds(tmp_path):
    said: list[str] = []
    scraped: list[str] = []
    (port,) = free_ports(1)

    def say_and_scrape(line: str) -> None:  # called after each decision is exported
        said.append(line)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            scraped.append(r.read().decode())

    with running_testbed("sqlite", tmp_path / "live") as bed:
        out: dict = {}
        load = threading.Thread(target=lambda: out.update(trace=bed.run(live_model(**{"run.duration": 20}), HTTP)))
        load.start()
        time.sleep(3)  # the run has set the model's pools (10 threads) and its load is on
        dry = control_loop(bed.admins, "gradient", {"threads": (2, 6)}, 2.0, tmp_path / "dry.jsonl", dry_run=True, duration=4, say=said.append)
        assert dry == {"threads": 10}, "a dry run changes nothing"
        real = control_loop(bed.admins, "gradient", {"threads": (2, 6)}, 2.0, tmp_path / "real.jsonl", duration=6, say=say_and_scrape, metrics_port=port)
        in_force = bed.admin.metrics()["pools"]["threads"]["size"]
        load.join()
    dry_log, real_log = read_log(tmp_path / "dry.jsonl"), read_log(tmp_path / "real.jsonl")
    assert dry_log["strategy"] == "gradient" and len(dry_log["decisions"]) == 2
    # Recommended: the limit brought within its bounds (6), nothing changed on the server.
    assert all(d["sizes"] == {"threads": 6} and not d["changed"] for d in dry_log["decisions"])
    assert any("recommended only" in line for line in said)
    decisions = real_log["decisions"]
    assert len(decisions) == 3
    assert decisions[0]["changed"], "the first decision brings 10 threads within [2, 6]"
    assert all(2 <= d["sizes"]["threads"] <= 6 for d in decisions)
    assert real == {"threads": decisions[-1]["sizes"]["threads"]} == {"threads": in_force}
    # Exported on /metrics as they are made.
    assert 'tierlab_control_size{pool="threads"} 6.0' in scraped[0] and 'tierlab_control_decisions_total{changed="true"} 1.0' in scraped[0]
    assert len(scraped) == 3
    # The load saw every request answered, ok or refused: none lost across the shrink.
    r = out["trace"].summary["requests"]
    assert r["ok"] > 0 and r["error"] == 0


def test_ctrl_c_leaves_the_sizes_in_force_says_them_and_stops_the_caller_too(tmp_path):
    # Raised on, not swallowed: studies/control.py --live ran its next strategy after a
    # first Ctrl-C when the loop returned as if its time were up.
    said: list[str] = []
    # Python's own SIGINT handler, whatever this process inherited: a suite started in
    # the background by a shell ignores SIGINT, and interrupt_main then does nothing.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    with running_testbed("sqlite", tmp_path / "live") as bed:
        timer = threading.Timer(3.0, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            control_loop(bed.admins, "gradient", {"threads": (2, 6)}, 1.0, tmp_path / "c.jsonl", duration=120, say=said.append)
        timer.join()
        signal.signal(signal.SIGINT, before)
        in_force = bed.admin.metrics()["pools"]["threads"]["size"]
    assert said[-1] == f"stopped; the configuration in force stays: threads {in_force}"
