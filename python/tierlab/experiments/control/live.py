"""The control loop beside a running testbed. Each interval the servers are observed
through their admin endpoints without disturbing a run's own observation (`observe` and
`drain` would restart or take it): the JSON state (`GET /metrics`) is sampled a few
times a second for the pools' levels (busy, queued: their means over the interval are
the samples' means) and read at the interval's ends for their counters (granted,
refused); the Prometheus exposition of the same endpoint is read at the ends for the
requests finished by type and outcome and their response-time histogram. The
differences over the interval are the `control::Observation` the Rust controller is fed;
its sizes are set with `configure` (not with `--dry-run`), and every decision is a line
of the log, in the trace's `ControlDecision` shape. The twin strategy is decided in
Python (`twin.TwinController`, over the twin model given), handed to the same Rust
controller, which puts its decisions through the same guards."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import psutil
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.parser import text_string_to_metric_families
from pydantic import TypeAdapter, ValidationError

from ... import _core
from ...errors import InputError
from ...live.admin import Admin
from ...live.decisions import read_control_log
from ...live.monitor import cpu_seconds
from ...model import load_model
from ...model.spec import Dwell, Revert, Twin
from ...run.twin import Bounds, TwinController
from ...trace.schema import ControlDecision, ControlSummary

_DECISION = TypeAdapter(ControlDecision)
_DWELL: TypeAdapter[int] = TypeAdapter(Dwell)
CORES = psutil.cpu_count() or 1  # the machine's, as the monitor divides by


def parse_bounds(text: str) -> Bounds:
    """`threads=2..64,connections=1..32` → {"threads": (2, 64), …}; an InputError naming
    `--bounds` and the part that is wrong otherwise."""
    out: Bounds = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.fullmatch(r"(threads|connections)=(\d+)\.\.(\d+)", part)
        if m is None:
            raise InputError(f"--bounds: {part!r} is not POOL=LEAST..GREATEST with POOL threads or connections, e.g. threads=2..64")
        lo, hi = int(m[2]), int(m[3])
        if not 1 <= lo <= hi:
            raise InputError(f"--bounds: {part!r}: need 1 ≤ least ≤ greatest")
        out[m[1]] = (lo, hi)  # type: ignore[index]  # the pattern admits only the two kinds
    if not out:
        raise InputError("--bounds: give at least one pool, e.g. threads=2..64")
    return out


def guard_options(margin: float, hold: int, dwell: int) -> tuple[Revert, int]:
    """`--revert-margin`, `--revert-hold` and `--dwell` checked as the model's
    `control.revert` and `control.dwell` are; an InputError naming the option otherwise."""
    try:
        return Revert(margin=margin, hold=hold), _DWELL.validate_python(dwell)
    except ValidationError as e:
        first = e.errors()[0]
        option = {"margin": "--revert-margin", "hold": "--revert-hold"}.get(str(first["loc"][-1]) if first["loc"] else "", "--dwell")
        raise InputError(f"{option}: {first['msg']} (got {first['input']!r})") from None


@dataclass
class _Ends:
    """A server's counters at one instant: per pool (acquired, rejected), and per
    (type, status) the finished requests' count, sum and cumulative histogram."""

    pools: dict[str, tuple[float, float]]
    counts: dict[tuple[str, str], float]
    sums: dict[tuple[str, str], float]
    buckets: dict[float, float]  # le → cumulative count of the ok requests, every type


def cpu_share(before: list[float | None], after: list[float | None], seconds: float, cores: int) -> float | None:
    """The tier's CPU over an interval of `seconds` from each server's process CPU
    seconds at its ends (`monitor.cpu_seconds`): per server the cores busy over the
    machine's `cores` — the monitor's `cpu utilization` series, a simulated CPU
    station's utilization — and their mean, as the pools'; None if a server's process
    was not read at either end or the interval took no time."""
    if not before or len(before) != len(after) or seconds <= 0 or None in before or None in after:
        return None
    used = [b - a for a, b in zip(cast(list[float], before), cast(list[float], after))]
    return sum(used) / len(used) / seconds / cores


@dataclass
class LiveObserver:
    """One interval's observation of the servers behind `admins` (their mean where a
    controller sizes each alike: the pools, the CPU; their sum where the tier's: the
    rates). With `pids` (the servers' processes, in the order of `admins`), the CPU
    they used; without, `cpu` is null."""

    admins: list[Admin]
    sample: float = 0.25
    pids: list[int] | None = None
    _last: list[_Ends] = field(default_factory=list)
    _cpu: tuple[float, list[float | None]] = (0.0, [])

    def _cpu_seconds(self) -> tuple[float, list[float | None]]:
        """The servers' CPU seconds so far, and when they were read."""
        return time.monotonic(), [cpu_seconds(p) for p in self.pids] if self.pids else []

    def _exposition(self, admin: Admin) -> _Ends:
        req = urllib.request.Request(admin.base + "/metrics", headers={"Authorization": f"Bearer {admin.token}", "Accept": "text/plain"})
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
        ends = _Ends({}, {}, {}, {})
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                key = (s.labels.get("type", ""), s.labels.get("status", ""))
                if s.name == "tierlab_response_seconds_count":
                    ends.counts[key] = s.value
                elif s.name == "tierlab_response_seconds_sum":
                    ends.sums[key] = s.value
                elif s.name == "tierlab_response_seconds_bucket" and key[1] == "ok":
                    le = float(s.labels["le"])
                    ends.buckets[le] = ends.buckets.get(le, 0.0) + s.value
                elif s.name in ("tierlab_pool_acquired_total", "tierlab_pool_rejected_total"):
                    acquired, rejected = ends.pools.get(s.labels["pool"], (0.0, 0.0))
                    ends.pools[s.labels["pool"]] = (s.value, rejected) if "acquired" in s.name else (acquired, s.value)
        return ends

    def start(self) -> None:
        self._last = [self._exposition(a) for a in self.admins]
        self._cpu = self._cpu_seconds()

    def observe(self, interval: float, stop: Callable[[], bool] = lambda: False) -> dict:
        """Sample for `interval` seconds; the interval's observation (JSON-ready)."""
        levels: list[list[dict]] = [[] for _ in self.admins]
        end = time.monotonic() + interval
        start = time.monotonic()
        while time.monotonic() < end and not stop():
            for k, a in enumerate(self.admins):
                levels[k].append(a.metrics()["pools"])
            time.sleep(max(0.0, min(self.sample, end - time.monotonic())))
        seconds = time.monotonic() - start
        (t0, cpu), self._cpu = self._cpu, self._cpu_seconds()
        now = [self._exposition(a) for a in self.admins]
        n = len(self.admins)
        pools: dict[str, dict] = {}
        for kind in ("threads", "connections"):
            seen = [lv for lv in levels if lv and kind in lv[-1]]
            if not seen:
                continue
            delta = [tuple(b - a for a, b in zip(last.pools[kind], cur.pools[kind])) for last, cur in zip(self._last, now)]
            pools[kind] = {
                "size": seen[0][-1][kind]["size"],
                "busy": sum(sum(s[kind]["busy"] for s in lv) / len(lv) for lv in seen) / n,
                "queued": sum(sum(s[kind]["queued"] for s in lv) / len(lv) for lv in seen) / n,
                "acquired": sum(d[0] for d in delta) / n,
                "rejected": sum(d[1] for d in delta) / n,
            }
        counts: dict[tuple[str, str], float] = {}
        sums: dict[tuple[str, str], float] = {}
        buckets: dict[float, float] = {}
        for last, cur in zip(self._last, now):
            for key, v in cur.counts.items():
                counts[key] = counts.get(key, 0.0) + v - last.counts.get(key, 0.0)
                sums[key] = sums.get(key, 0.0) + cur.sums.get(key, 0.0) - last.sums.get(key, 0.0)
            for le, v in cur.buckets.items():
                buckets[le] = buckets.get(le, 0.0) + v - last.buckets.get(le, 0.0)
        self._last = now
        by_type: dict[str, float] = {}
        for (ty, _), c in counts.items():
            by_type[ty] = by_type.get(ty, 0.0) + c
        finished = sum(by_type.values())
        ok = sum(c for (_, st), c in counts.items() if st == "ok")
        ok_sum = sum(v for (_, st), v in sums.items() if st == "ok")
        return {
            "interval": seconds,
            # A live server counts requests as they finish: the mix and rate are those.
            "arrivals": finished / seconds,
            "mix": {t: c / finished for t, c in sorted(by_type.items())} if finished else {},
            "throughput": ok / seconds,
            "errors": (finished - ok) / seconds,
            "response_time": _latency(ok, ok_sum, buckets),
            "pools": pools,
            # Over the time between the two readings: it differs from `seconds` by the
            # expositions' reads.
            "cpu": cpu_share(cpu, self._cpu[1], self._cpu[0] - t0, CORES),
        }


def _latency(count: float, total: float, buckets: dict[float, float]) -> dict | None:
    """Mean, and percentiles interpolated within the histogram's buckets (Prometheus's
    histogram_quantile); None without a request."""
    if count <= 0:
        return None
    edges = sorted(buckets)

    def quantile(q: float) -> float:
        rank, lower, below = q * count, 0.0, 0.0
        for le in edges:
            if buckets[le] >= rank:
                if le == float("inf"):
                    return lower
                return lower + (le - lower) * (rank - below) / max(buckets[le] - below, 1e-12)
            lower, below = le, buckets[le]
        return lower

    return {"mean": total / count, "p50": quantile(0.5), "p90": quantile(0.9), "p99": quantile(0.99)}


class ControlMetrics:
    """The controller's decisions in the Prometheus format: each re-sized pool's size in
    force, and the decisions made, by whether they changed a size."""

    def __init__(self, registry: CollectorRegistry):
        self.size = Gauge("tierlab_control_size", "Pool size in force after the last decision.", ["pool"], registry=registry)
        self.decisions = Counter("tierlab_control_decisions", "Decisions made, by whether they changed a size.", ["changed"], registry=registry)

    def record(self, sizes: dict[str, int], changed: bool) -> None:
        for pool, size in sizes.items():
            self.size.labels(pool).set(size)
        self.decisions.labels(str(changed).lower()).inc()


@contextmanager
def _serving(port: int | None) -> Iterator[ControlMetrics | None]:
    """The metrics on http://127.0.0.1:PORT/metrics for as long as the block runs."""
    if port is None:
        yield None
        return
    registry = CollectorRegistry()
    metrics = ControlMetrics(registry)
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        yield metrics
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def read_log(path: str | Path) -> ControlSummary:
    """A control log (its first line the controller, then one decision a line) as the
    trace's `summary.control`."""
    return read_control_log(path)[0]


def control_loop(
    admins: list[Admin],
    strategy: str,
    bounds: Bounds,
    interval: float,
    log: Path,
    dry_run: bool = False,
    duration: float | None = None,
    say: Callable[[str], None] = print,
    sample: float = 0.25,
    max_step: int | None = None,
    metrics_port: int | None = None,
    twin: Twin | None = None,
    revert: Revert | None = None,
    dwell: int = 0,
    pids: list[int] | None = None,
) -> dict[str, int]:
    """Observe, decide and (unless `dry_run`) re-size every `interval` seconds, for
    `duration` seconds or until Ctrl-C, each pool moved at most `max_step` a decision;
    every decision appended to `log` (and with `metrics_port`, on
    http://127.0.0.1:PORT/metrics). Returns the
    sizes in force at the end. Ctrl-C (or SIGTERM) leaves them so, `say`s which, and is
    raised on, so that whatever called the loop stops too. The twin
    strategy takes its parameters and its model (`twin.model`, a file) from `twin`; the
    guards their settings from `revert` (none: its defaults) and `dwell` (the model's
    `control:` fields). With `pids` (the servers' processes, in the order of `admins`)
    each observation carries the tier's CPU."""
    # The tier as the server names itself (the middleware's `Tier.name`).
    tier = admins[0].metrics()["tier"]
    spec = {"interval": interval, "bounds": {k: list(v) for k, v in bounds.items()}, "strategy": _strategy(strategy, twin), "max_step": max_step}
    spec |= {"revert": (revert or Revert()).model_dump(), "dwell": dwell}
    try:
        controller = _core.Controller(json.dumps(spec), _twin(twin, bounds, tier) if strategy == "twin" else None)
    except ValueError as e:
        raise InputError(str(e)) from None
    observer = LiveObserver(admins, sample, pids)
    log.parent.mkdir(parents=True, exist_ok=True)
    origin = time.monotonic()
    with log.open("x") as out, _serving(metrics_port) as exported:
        # `clock`: the monotonic clock the decisions' `t` count from, the machine's, so a
        # live run beside it can place them in its own trace (live.decisions.control_during).
        out.write(json.dumps({"strategy": strategy, "tier": tier, "interval": interval, "clock": origin}) + "\n")
        observer.start()
        try:
            while duration is None or time.monotonic() - origin < duration - 1e-9:
                o = observer.observe(interval)
                sizes, reason = controller.decide(json.dumps(o))
                in_force = {k: p["size"] for k, p in o["pools"].items() if k in sizes}
                changed = sizes != in_force
                if changed and not dry_run:
                    settings = {k: {"size": v} for k, v in sizes.items() if in_force.get(k) != v}
                    for a in admins:
                        a.configure(settings)
                d: ControlDecision = {"t": round(time.monotonic() - origin, 3), "sizes": sizes, "changed": changed and not dry_run, "reason": reason}
                out.write(json.dumps(_DECISION.validate_python(d)) + "\n")
                out.flush()
                if exported is not None:
                    exported.record(sizes if not dry_run else in_force, d["changed"])
                say(f"t={d['t']:.1f}s {_sizes(sizes)}{' (recommended only: --dry-run)' if dry_run and changed else ''}: {reason}")
        except KeyboardInterrupt:
            final = {k: v["size"] for k, v in admins[0].metrics()["pools"].items() if k in bounds}
            say(f"stopped; the configuration in force stays: {_sizes(final)}")
            raise  # the caller stops too: a study's next strategy does not start
    return {k: v["size"] for k, v in admins[0].metrics()["pools"].items() if k in bounds}


def _strategy(name: str, twin: Twin | None) -> dict:
    if name == "gradient":
        # Gradient2's defaults, its windows in intervals (crates/control).
        return {"strategy": "gradient", "smoothing": 0.2, "queue": 4.0, "tolerance": 1.5, "long_window": 120, "warmup": 10}
    if name == "static":
        return {"strategy": "static"}
    if name == "twin":
        if twin is None or twin.model is None:
            raise InputError("--twin: the twin strategy needs the twin, a model file (`tierlab twin calibrate … --out twin.yaml`)")
        return {"strategy": "twin"} | twin.model_dump(exclude={"model"})
    raise InputError(f"--strategy: {name!r} is not one; static, gradient or twin")


def _twin(twin: Twin | None, bounds: Bounds, tier: str) -> TwinController:
    """The twin strategy over the twin model file `twin.model`, controlling `tier`; the
    observations' CPU is a share of the machine's cores (`cpu_share`)."""
    assert twin is not None and twin.model is not None, "checked by _strategy"
    return TwinController(load_model(twin.model), twin, bounds, tier, CORES)


def _sizes(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(sizes.items()))
