"""Types of the compiled core (`crates/py`): the engine and the load generator behind
a thin API. Each run returns the same dict: the typed summary as JSON text
(`crates/trace`), the series, the records, the names that decode them, and the
exception that stopped the run early (None if it ran to the end)."""

from collections.abc import Callable
from typing import Any, Protocol, TypedDict, final, type_check_only

import numpy as np
import numpy.typing as npt

__all__ = [
    "simulate",
    "generate_load",
    "summary_schema",
    "model_schema",
    "latency_bounds",
    "serve_proxy",
    "Controller",
    "__version__",
    "PHASES",
    "SCHEMA_VERSION",
    "MAX_POOLS",
    "MAX_SERVERS",
]

__version__: str
PHASES: list[str]
SCHEMA_VERSION: int
MAX_POOLS: int  # pools per tier (a request's held pools are a 64-bit set)
MAX_SERVERS: int  # servers per tier, and dispatchers

# The shapes of the dicts the functions return: types only, not names of the module.
@type_check_only
class Series(TypedDict):
    window_start: npt.NDArray[np.float64]
    values: npt.NDArray[np.float64]  # windows × series
    tier: list[str]
    server: list[int]
    resource: list[str]
    metric: list[str]

@type_check_only
class Output(TypedDict):
    summary: str
    series: Series
    records: dict[str, npt.NDArray[Any]] | None
    type_names: list[str]
    status_names: list[str]
    tier_names: list[str]
    stopped_by: BaseException | None

# A control strategy decided in Python (the twin: tierlab.run.twin): fed
# each interval's observation (the dict of control::Observation's JSON), it returns the
# sizes by pool kind and the reason.
@type_check_only
class Strategy(Protocol):
    def decide(self, o: dict[str, Any], /) -> tuple[dict[str, int], str]: ...

def simulate(model_json: str, progress: Callable[[float], object] | None = None, controller: Strategy | None = None) -> Output: ...
def generate_load(
    config_json: str,
    progress: Callable[[float, float, float, float], object] | None = None,
    latency: Callable[[list[list[int]], list[float]], object] | None = None,
) -> Output: ...
def latency_bounds() -> list[float]: ...
def summary_schema() -> str: ...
def model_schema() -> str: ...
def serve_proxy(config_path: str, threads: int | None = None) -> None: ...

@final
class Controller:
    """An online controller (crates/control): a spec's JSON in (and for a strategy decided
    in Python, twin, its object); each interval's observation as JSON in, (sizes by pool
    kind, reason) out."""
    def __new__(cls, spec_json: str, strategy: Strategy | None = None) -> Controller: ...
    def decide(self, observation_json: str) -> tuple[dict[str, int], str]: ...
