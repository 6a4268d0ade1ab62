"""One runner for every sweep (profiling grids, validation searches, load ramps,
studies): many simulations of one model, each with its own changes and seed, run in
local worker processes by default or on a Dask cluster (`scheduler=` an address).

Each run is measured where it ran — `measure(trace)` returns something small — so
traces never cross process or machine boundaries. Results come back in input order
and depend only on (model, changes, seed): the same on any executor."""

from __future__ import annotations

import multiprocessing
import os
import signal
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import InputError, ModelError
from ..model import LoadedModel, ModelWarning, load_model
from ..trace import Trace
from .progress import progress as show_progress
from .simulate import simulate

T = TypeVar("T")


@dataclass(frozen=True)
class Run:
    """One simulation: values to change in the model (dotted paths, as in
    `LoadedModel.with_changes`) and the seed."""

    changes: dict[str, Any] = field(default_factory=dict)
    seed: int = 1


def sweep(
    model: str | LoadedModel,
    runs: Sequence[Run],
    measure: Callable[[Trace], T],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: str | None = "sweep",
    runner: Callable[[LoadedModel], Trace] | None = None,
    on_result: Callable[[int, T], None] | None = None,
) -> list[T]:
    """Simulate every run and return `measure(trace)` of each, in order.

    `measure` must be a module-level function (it is sent to the workers). `workers`
    local processes (default: one per core; 1 = in this process), or the Dask
    scheduler at `scheduler` ("tcp://host:8786"). `progress` labels a progress bar on
    stderr (None: no bar). Ctrl-C stops the workers and raises KeyboardInterrupt.

    `runner(model) -> Trace` executes each run instead of the simulator — e.g.
    `tierlab.live.LiveRunner`, which measures the live testbed; runs then go one after
    another in this process (there is one system to measure).

    `on_result(i, value)` is called as each run's result comes in (in the order the
    runs finish), e.g. to report it or write it at once."""
    loaded = load_model(model)
    for i, run in enumerate(runs):  # fail here, with the run named, not in a worker
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ModelWarning)
                loaded.with_changes({**run.changes, "run.seed": run.seed}).engine()
        except ModelError as e:
            raise ModelError([(f"run {i} ({_label(run)}): {path}", msg) for path, msg in e.problems], e.source) from None
    tasks = [(loaded, run, measure) for run in runs]
    results: list[Any] = [None] * len(tasks)
    with show_progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=progress is None,
    ) as bar:
        task = bar.add_task(progress or "", total=len(tasks))

        def done(i: int, value: Any) -> None:
            results[i] = value
            bar.advance(task)
            if on_result is not None:
                on_result(i, value)

        if runner is not None:
            if scheduler is not None:
                raise InputError("runs on a live system go one at a time from here; drop the Dask scheduler")
            for i, t in enumerate(tasks):
                done(i, _execute(t, runner))
        elif scheduler is not None:
            _on_dask(scheduler, tasks, done)
        elif (workers or os.cpu_count() or 1) == 1 or len(tasks) == 1:
            for i, t in enumerate(tasks):
                done(i, _execute(t))
        else:
            _on_processes(workers or os.cpu_count() or 1, tasks, done)
    return results


def _label(run: Run) -> str:
    return ", ".join(f"{k}={v}" for k, v in {**run.changes, "seed": run.seed}.items())


def _execute(task: tuple, runner: Callable[[LoadedModel], Trace] = simulate) -> Any:
    loaded, run, measure = task
    with warnings.catch_warnings():
        # Sweeps overload systems on purpose (profiling, capacity searches).
        warnings.simplefilter("ignore", ModelWarning)
        trace = runner(loaded.with_changes({**run.changes, "run.seed": run.seed}))
    return measure(trace)


def _indexed(item: tuple) -> tuple[int, Any]:
    i, task = item
    return i, _execute(task)


def _quiet_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us


def _on_processes(workers: int, tasks: list, done: Callable) -> None:
    pool = multiprocessing.get_context("fork").Pool(min(workers, len(tasks)), initializer=_quiet_worker)
    try:
        for i, value in pool.imap_unordered(_indexed, list(enumerate(tasks))):
            done(i, value)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()


def _on_dask(address: str, tasks: list, done: Callable) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise InputError("a Dask scheduler needs dask.distributed: pip install 'tierlab[dask]'") from None
    with Client(address) as client:
        futures = [client.submit(_indexed, (i, t), pure=False) for i, t in enumerate(tasks)]
        try:
            for fut in as_completed(futures):
                done(*fut.result())
        except BaseException:
            client.cancel(futures)
            raise
