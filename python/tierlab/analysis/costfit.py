"""Chen & Gorton's contention cost model: C = a·x + b·x/y + c·y, with x clients and y
server threads, fitted by ordinary least squares to a table of measured costs (average
response time, or wall time per transaction). The optimal thread count for x clients
minimises C: y*(x) = √(b·x / c).

Input: a long table with columns `clients,threads,value` — a CSV, or a frame built
from a simulation sweep (`tierlab.experiments.costtable`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from .tables import positive_numbers, read_csv

COLUMNS = ("clients", "threads", "value")
PARAMETERS = ("a", "b", "c")


@dataclass
class CostModel:
    a: float
    b: float
    c: float
    stderr: dict[str, float]
    r2: float
    n: int
    data: pd.DataFrame

    def cost(self, clients, threads):
        x, y = np.asarray(clients, float), np.asarray(threads, float)
        return self.a * x + self.b * x / y + self.c * y

    def optimal_threads(self, clients: float) -> int:
        """y*(x) = √(b·x/c), rounded to whole threads (at least 1)."""
        if self.b <= 0 or self.c <= 0:
            raise InputError(f"no interior optimum: the fit gives b = {self.b:.4g}, c = {self.c:.4g} (both must be positive)")
        return max(1, round(math.sqrt(self.b * clients / self.c)))

    def to_dict(self) -> dict:
        return {
            "a": self.a,
            "b": self.b,
            "c": self.c,
            "stderr": self.stderr,
            "r2": self.r2,
            "n": self.n,
            "optimal_threads": {str(int(x)): self.optimal_threads(x) for x in sorted(self.data["clients"].unique())},
        }


def read_table(path: str | Path) -> pd.DataFrame:
    df = read_csv(path, COLUMNS, dtype=str)
    return check_table(df, str(path))


def check_table(df: pd.DataFrame, where: str = "table") -> pd.DataFrame:
    """The table as floats; every problem names its row (as in the file: header = line 1)."""
    return positive_numbers(df, COLUMNS, where)


def fit(table: pd.DataFrame) -> CostModel:
    """Least-squares fit of C = a·x + b·x/y + c·y, with standard errors and R²."""
    d = check_table(table)
    n, k = len(d), len(PARAMETERS)
    if n <= k:
        raise InputError(f"{n} measurements cannot fit {k} parameters with an error estimate; measure at least {k + 1} (clients, threads) points")
    x, y, v = d["clients"].to_numpy(), d["threads"].to_numpy(), d["value"].to_numpy()
    X = np.column_stack([x, x / y, y])
    if np.linalg.matrix_rank(X) < k:
        raise InputError("the (clients, threads) points do not determine a, b and c; vary both clients and threads")
    coef, *_ = np.linalg.lstsq(X, v, rcond=None)
    resid = v - X @ coef
    sigma2 = resid @ resid / (n - k)
    se = np.sqrt(np.diag(sigma2 * np.linalg.inv(X.T @ X)))
    r2 = 1 - (resid @ resid) / ((v - v.mean()) @ (v - v.mean()))
    a, b, c = map(float, coef)
    return CostModel(a, b, c, dict(zip(PARAMETERS, map(float, se))), float(r2), n, d)
