"""Session navigation chains: loading (CSV or inline), checking, and the visit mix
they produce."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .spec import Chain

ROW_SUM_TOLERANCE = 1e-3  # published matrices are rounded to 4 decimals (TPC-W rows sum to 0.9999)


@dataclass
class ChainData:
    states: list[str]
    matrix: np.ndarray  # square over `states`; BACK and END rows are zero
    # The rows as read (normalized) before the chain's `reweight`: what a workload
    # phase's reweighting applies to instead (`reweighted`).
    rows: np.ndarray

    def index(self, state: str) -> int:
        return self.states.index(state)


def read_chain(chain: Chain, base_dir: Path, path: str = "workload.chain") -> tuple[ChainData | None, list[tuple[str, str]]]:
    """Read and check a chain; returns (data or None, problems)."""
    problems: list[tuple[str, str]] = []
    if (chain.csv is None) == (chain.matrix is None):
        return None, [(path, "give exactly one of `csv` (a file) or `matrix` (inline {from: {to: p}})")]
    rows: dict[str, dict[str, float]]
    if chain.csv is not None:
        rows, err = _read_csv(base_dir / chain.csv)
        if err:
            return None, [(f"{path}.csv", err)]
    else:
        rows = chain.matrix or {}
    states = list(rows)
    for r in rows.values():
        states += [s for s in r if s not in states]
    n = len(states)
    matrix = np.zeros((n, n))
    for frm, row in rows.items():
        for to, p in row.items():
            matrix[states.index(frm), states.index(to)] = p
    for i, s in enumerate(states):
        with np.errstate(over="ignore"):  # a row of 1e308s: its sum is reported as inf
            total = matrix[i].sum()
        if s not in rows:
            if s not in (chain.back, chain.end):
                problems.append((path, f"state {s!r} can be entered but has no row of its own; add its row, or name it as `back`/`end`"))
            continue
        if total <= 0:
            problems.append((f"{path} row {s!r}", "all probabilities are zero; every state needs a way out"))
        elif abs(total - 1) > ROW_SUM_TOLERANCE and not chain.normalize:
            problems.append((f"{path} row {s!r}", f"probabilities sum to {total:.6g}, not 1; fix the row or set `normalize: true` to rescale it"))
        else:
            if np.isinf(total):  # a row of 1e308s: divided by its sum it was all zeros, a state with no way out
                matrix[i] /= matrix[i].max()
                total = matrix[i].sum()
            matrix[i] /= total
    reweighted_matrix, reweight_problems = reweighted(states, matrix, chain.reweight, f"{path}.reweight")
    problems += reweight_problems
    if chain.start not in states:
        problems.append((f"{path}.start", f"{chain.start!r} is not a state of the chain (states: {', '.join(states[:8])}…)"))
    return ChainData(states, reweighted_matrix, matrix), problems


def reweighted(states: list[str], rows: np.ndarray, reweight: dict[str, float], path: str) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """`rows` (a chain's, over `states`) with every transition into each state of
    `reweight` multiplied by its factor, then each row rescaled to sum to 1 (a new
    matrix), and the problems (a state the chain lacks, at `path`.STATE)."""
    matrix = rows.copy()
    problems: list[tuple[str, str]] = []
    for s, factor in reweight.items():
        if s not in states:
            problems.append((f"{path}.{s}", f"{s!r} is not a state of the chain"))
            continue
        # Make the state `factor` times as likely to be chosen next, from every row.
        matrix[:, states.index(s)] *= factor
    if reweight:
        with np.errstate(over="ignore"):
            sums = matrix.sum(axis=1, keepdims=True)
        if np.isinf(sums).any():  # as in read_chain: by the largest entry first
            tops = matrix.max(axis=1, keepdims=True)
            np.divide(matrix, tops, out=matrix, where=tops > 0)
            sums = matrix.sum(axis=1, keepdims=True)
        np.divide(matrix, sums, out=matrix, where=sums > 0)
    return matrix, problems


def _read_csv(file: Path) -> tuple[dict, str | None]:
    """The rows of a chain CSV as {from: {to: p}}, or the first problem, naming its
    line: a state (row) or a column given twice is refused, as PyYAML's duplicate keys
    are (kept silently, the second row replaced the first, and a column's second copy
    left the rows summing short)."""
    if not file.is_file():
        return {}, f"file not found: {file}"
    try:
        with file.open(newline="", encoding="utf-8") as fh:
            table = list(csv.reader(fh))
    except UnicodeDecodeError as e:
        return {}, f"{file}: not a text (UTF-8) file: byte {e.start} cannot be decoded"
    except csv.Error as e:
        return {}, f"{file}: not a CSV table ({e})"
    except OSError as e:
        return {}, f"cannot read {file}: {e.strerror}"
    if len(table) < 2 or not table[0]:
        return {}, f"{file}: needs a header row and at least one state row"
    header = [h.strip() for h in table[0][1:]]
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        return {}, f"{file} line 1: column(s) {', '.join(map(repr, twice))} given twice; give each state one column"
    keep = [j for j, h in enumerate(header) if h != "row_sum"]  # RUBBoS/RUBiS raw files carry a row_sum column
    rows: dict[str, dict[str, float]] = {}
    first: dict[str, int] = {}
    for ln, line in enumerate(table[1:], start=2):
        if not any(c.strip() for c in line):
            continue
        cells = line[1:]
        if len(cells) != len(header):
            return {}, f"{file} line {ln}: {len(cells)} values for {len(header)} columns"
        state = line[0].strip()
        if state in first:
            return {}, f"{file} line {ln}: the row of {state!r} is given twice (first on line {first[state]}); give each state one row"
        first[state] = ln
        try:
            values = {header[j]: float(cells[j]) for j in keep}
        except ValueError:
            return {}, f"{file} line {ln}: a value is not a number"
        bad = next((to for to, p in values.items() if not math.isfinite(p) or p < 0), None)
        if bad is not None:
            return {}, f"{file} line {ln}, column {bad!r}: {values[bad]:g} is not a probability (a finite number ≥ 0)"
        rows[state] = {to: p for to, p in values.items() if p != 0}
    return rows, None


def visit_mix(data: ChainData, start: int, roles: list[str]) -> tuple[dict[str, float], float]:
    """Fraction of requests per state and mean requests per session.

    ``roles[i]`` is "page", "back", "end" or "entry". With an end state this is the
    expected number of visits from `start` (absorbing chain); without one, the
    stationary distribution (sessions never end by the chain). BACK is approximated
    as re-requesting the current page (it re-issues the previous one).
    """
    P = data.matrix.copy()
    n = len(roles)
    for i in range(n):
        for j in range(n):
            if roles[j] == "back" and P[i, j] > 0:
                P[i, i] += P[i, j]
                P[i, j] = 0
    transient = [i for i in range(n) if roles[i] in ("page", "entry")]
    Q = P[np.ix_(transient, transient)]
    if any(roles[i] == "end" for i in range(n)) and np.abs(np.linalg.eigvals(Q)).max() < 1 - 1e-12:
        e = np.zeros(len(transient))
        e[transient.index(start)] = 1
        visits = np.linalg.solve((np.eye(len(transient)) - Q).T, e)
    else:
        vals, vecs = np.linalg.eig(Q.T)
        visits = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
        visits = np.abs(visits)
    pages = {data.states[t]: v for t, v in zip(transient, visits) if roles[t] == "page"}
    total = sum(pages.values())
    per_session = total if any(r == "end" for r in roles) else float("inf")
    return {s: v / total for s, v in pages.items()}, per_session
