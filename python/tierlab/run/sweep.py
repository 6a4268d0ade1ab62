"""One runner for every sweep (profiling grids, validation searches, load ramps,
studies): many simulations of one model, each with its own changes and seed, run in
local worker processes by default or on a Dask cluster (`scheduler=` an address).

Each run is measured where it ran — `measure(trace)` returns something small — so
traces never cross process or machine boundaries. Results depend only on (model,
changes, seed): the same on any executor, whatever order the runs finish in. `sweep`
runs a list and returns its results in input order; `Sweep` takes runs as earlier
results call for them."""

from __future__ import annotations

import heapq
import multiprocessing
import os
import queue
import signal
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import InputError, ModelError
from ..model import LoadedModel, ModelWarning
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
    model: LoadedModel,
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
    runs finish), e.g. to report it or write it at once. Runs that depend on earlier
    results: `Sweep`."""
    results: list[Any] = [None] * len(runs)
    with Sweep(model, workers=max(1, min(workers or os.cpu_count() or 1, len(runs))), scheduler=scheduler, progress=progress, runner=runner) as s:
        # Every run is checked here, with the run named, before the first goes out.
        checked = [s.checked(i, run) for i, run in enumerate(runs)]
        for i, (run, m) in enumerate(zip(runs, checked)):
            s.submit(i, run, measure, model=m)
        for i, value in s.results():
            results[i] = value
            if on_result is not None:
                on_result(i, value)
    return results


class Sweep:
    """A sweep whose runs are submitted as earlier results call for them, e.g. a search
    that picks each point's next rate from its last run. A run goes out as soon as it is
    submitted and a worker is free: no barrier between rounds, where one slow run of a
    round would idle the other workers. Executors as in `sweep`.

        with Sweep(model, workers=2) as s:
            s.submit("a", Run({...}, 1), measure)
            for key, value in s.results():  # as runs finish; submit more meanwhile
                ...

    Of the runs waiting for a worker, the highest `priority` goes first (then the
    earliest submitted): a run that others wait for, or a chain's next step, ahead of
    new work, so chains do not all end at once with one worker busy. Only one run per
    worker (and a spare or two) is handed to the executor at a time, so those choices stay
    with the parent."""

    def __init__(
        self,
        model: LoadedModel,
        *,
        workers: int | None = None,
        scheduler: str | None = None,
        progress: str | None = "sweep",
        runner: Callable[[LoadedModel], Trace] | None = None,
    ):
        self.model = model
        if runner is not None and scheduler is not None:
            raise InputError("runs on a live system go one at a time from here; drop the Dask scheduler")
        workers = workers or os.cpu_count() or 1
        self._executor: _Executor
        if runner is not None or (scheduler is None and workers == 1):
            self._executor = _InProcess(runner or simulate)
        elif scheduler is not None:
            self._executor = _OnDask(scheduler)
        else:
            self._executor = _OnProcesses(workers)
        self._waiting: list[tuple[int, int, Run, LoadedModel, Callable]] = []  # a heap: (-priority, ticket, ...)
        self._keys: dict[int, Any] = {}  # of the runs not yet back, by ticket
        self._submitted = 0  # the next ticket
        self._at_most = 0  # the caller's bound on the runs it submits in all (`at_most`)
        self._running = 0
        self._bar = show_progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            disable=progress is None,
        )
        self._task = self._bar.add_task(progress or "", total=0)

    def __enter__(self) -> Sweep:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._executor.close(failed=exc[0] is not None)
        finally:
            self._bar.__exit__(None, None, None)

    def checked(self, ticket: int, run: Run) -> LoadedModel:
        """The model of `run`, compiled here: a bad run is an error naming it before any
        goes out. The compiled input travels with the model, so no worker compiles it
        again."""
        model = self._model_of(ticket, run)
        with _naming(run, ticket):
            _ = model.compiled  # compiled now, and cached on the value
        return model

    def submit(self, key: Any, run: Run, measure: Callable[[Trace], Any], *, priority: int = 0, check: bool = True, model: LoadedModel | None = None) -> None:
        """Queue `run`; `results` yields `(key, measure(trace))` once it ran. `measure`
        must be a module-level function. `check`: compile the run here, before it is
        queued (`checked`); without, a bad run fails when a worker reaches it (a run
        submitted as the next step of a chain goes out at once: the worker compiles it,
        so the parent's work stays small). `model`: the run's model, already `checked`."""
        ticket = self._submitted
        if model is None:
            model = self.checked(ticket, run) if check else self._model_of(ticket, run)
        heapq.heappush(self._waiting, (-priority, ticket, run, model, measure))
        self._keys[ticket] = key
        self._submitted += 1
        self._bar.update(self._task, total=max(self._submitted, self._at_most))
        self._hand_over()

    def at_most(self, runs: int) -> None:
        """The most runs the caller will submit in all, shown as the bar's total from
        the start (else the total is the runs submitted so far, and grows as they are);
        the caller lowers it as it learns that fewer are needed."""
        self._at_most = runs
        self._bar.update(self._task, total=max(self._submitted, runs))

    def results(self) -> Iterator[tuple[Any, Any]]:
        """(key, value) of each run as it finishes, until every submitted run (those
        submitted while iterating too) is back."""
        while self._running:
            ticket, value = self._executor.next()
            self._running -= 1
            self._bar.advance(self._task)
            self._hand_over()  # before the caller's work on this result
            yield self._keys.pop(ticket), value

    def _hand_over(self) -> None:
        while self._waiting and self._running < self._executor.slots:
            _, ticket, run, model, measure = heapq.heappop(self._waiting)
            self._executor.start(ticket, model, run, measure)
            self._running += 1

    def _model_of(self, ticket: int, run: Run) -> LoadedModel:
        with _naming(run, ticket):
            return self.model.with_changes({**run.changes, "run.seed": run.seed})


@contextmanager
def _naming(run: Run, ticket: int) -> Iterator[None]:
    """A model error in here names the run (`ticket`: its place in the sweep)."""
    try:
        yield
    except ModelError as e:
        raise ModelError([(f"run {ticket} ({_label(run)}): {path}", msg) for path, msg in e.problems], e.source) from None


def _label(run: Run) -> str:
    return ", ".join(f"{k}={v}" for k, v in {**run.changes, "seed": run.seed}.items())


def _execute(model: LoadedModel, ticket: int, run: Run, measure: Callable[[Trace], Any], runner: Callable[[LoadedModel], Trace] = simulate) -> Any:
    with _naming(run, ticket), warnings.catch_warnings():
        # Sweeps overload systems on purpose (profiling, capacity searches).
        warnings.simplefilter("ignore", ModelWarning)
        trace = runner(model)
    return measure(trace)


class _Executor(Protocol):
    slots: int  # runs handed over at a time

    def start(self, ticket: int, model: LoadedModel, run: Run, measure: Callable) -> None: ...

    def next(self) -> tuple[int, Any]:
        """The ticket and value of the next run to finish."""
        ...

    def close(self, failed: bool) -> None: ...


class _InProcess:
    """Runs one at a time in this process, when `next` asks."""

    slots = 1

    def __init__(self, runner: Callable[[LoadedModel], Trace]):
        self.runner = runner
        self.started: tuple[int, LoadedModel, Run, Callable] | None = None

    def start(self, ticket: int, model: LoadedModel, run: Run, measure: Callable) -> None:
        self.started = (ticket, model, run, measure)

    def next(self) -> tuple[int, Any]:
        assert self.started is not None
        (ticket, model, run, measure), self.started = self.started, None
        return ticket, _execute(model, ticket, run, measure, self.runner)

    def close(self, failed: bool) -> None:
        pass


def _start_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us


def _in_worker(ticket: int, model: LoadedModel, run: Run, measure: Callable) -> tuple[int, Any]:
    return ticket, _execute(model, ticket, run, measure)


class _OnProcesses:
    """Forked worker processes; each run's model goes with it, compiled when the parent
    checked it."""

    def __init__(self, workers: int):
        self.slots = workers + 1
        self.pool = multiprocessing.get_context("fork").Pool(workers, initializer=_start_worker)
        self.done: queue.SimpleQueue = queue.SimpleQueue()

    def start(self, ticket: int, model: LoadedModel, run: Run, measure: Callable) -> None:
        self.pool.apply_async(_in_worker, (ticket, model, run, measure), callback=self.done.put, error_callback=self.done.put)

    def next(self) -> tuple[int, Any]:
        got = self.done.get()
        if isinstance(got, BaseException):
            raise got
        return got

    def close(self, failed: bool) -> None:
        if failed:
            self.pool.terminate()
        else:
            self.pool.close()
        self.pool.join()


class _OnDask:
    """A Dask cluster; each run's model goes with it, as to local workers."""

    def __init__(self, address: str):
        try:
            from distributed import Client, as_completed
        except ImportError:
            raise InputError("a Dask scheduler needs dask.distributed: pip install 'tierlab[dask]'") from None
        self.client = Client(address)
        # A spare run per worker: the scheduler places a queued run on one worker, and
        # another that frees up would otherwise wait for this client to send more.
        self.slots = 2 * sum(self.client.nthreads().values())
        self.finished = as_completed()
        self.futures: set = set()

    def start(self, ticket: int, model: LoadedModel, run: Run, measure: Callable) -> None:
        fut = self.client.submit(_in_worker, ticket, model, run, measure, pure=False)
        self.futures.add(fut)
        self.finished.add(fut)

    def next(self) -> tuple[int, Any]:
        fut = next(self.finished)
        self.futures.discard(fut)
        return fut.result()

    def close(self, failed: bool) -> None:
        if failed:
            self.client.cancel(list(self.futures))
        self.client.close()
