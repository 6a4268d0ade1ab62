"""Distributions, written the short way in YAML:

0.05                                  constant
{constant: 0.05}
{exponential: 7}                      mean 7
{exponential: {mean: 7, max: 70}}     capped at 70 (TPC-W think times)
{uniform: [1, 3]}
{normal: {mean: 0.2, sd: 0.01}}       truncated at 0
{lognormal: {mean: 2, sd: 1.5}}       mean and sd of the variable itself
{empirical: [1, 2, 2, 5]}             equally likely values
{empirical: {values: [1, 5], weights: [3, 1]}}
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from .types import NonNeg, Pos


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Dist(_Strict):
    """A distribution: its mean, and its form for the engine (crates/workload's Dist)."""

    def mean(self) -> float:
        raise NotImplementedError

    def engine(self) -> dict:
        raise NotImplementedError


class Constant(_Dist):
    constant: NonNeg

    def mean(self) -> float:
        return self.constant

    def engine(self) -> dict:
        return {"kind": "constant", "value": self.constant}


class ExpParams(_Strict):
    mean: Pos
    max: Pos | None = None


class Exponential(_Dist):
    exponential: Pos | ExpParams

    def _p(self) -> ExpParams:
        e = self.exponential
        return e if isinstance(e, ExpParams) else ExpParams(mean=e)

    def mean(self) -> float:
        p = self._p()
        return p.mean if p.max is None else p.mean * (1 - math.exp(-p.max / p.mean))

    def engine(self) -> dict:
        p = self._p()
        return {"kind": "exponential", "mean": p.mean, "max": p.max}


class Uniform(_Dist):
    uniform: tuple[NonNeg, NonNeg]

    @model_validator(mode="after")
    def _ordered(self):
        if self.uniform[0] > self.uniform[1]:
            raise ValueError("uniform: [low, high] needs low ≤ high")
        return self

    def mean(self) -> float:
        return sum(self.uniform) / 2

    def engine(self) -> dict:
        return {"kind": "uniform", "low": self.uniform[0], "high": self.uniform[1]}


class MeanSd(_Strict):
    mean: NonNeg
    sd: NonNeg


class Normal(_Dist):
    normal: MeanSd

    def mean(self) -> float:
        # Truncation at 0 raises the mean; the engine redraws negatives.
        from scipy.stats import truncnorm

        m, s = self.normal.mean, self.normal.sd
        return m if s == 0 else float(truncnorm.mean(-m / s, float("inf"), loc=m, scale=s))

    def engine(self) -> dict:
        return {"kind": "normal", "mean": self.normal.mean, "sd": self.normal.sd}


class LognormalParams(_Strict):
    mean: Pos
    sd: Pos

    @model_validator(mode="after")
    def _finite_shape(self):
        if not self.sd / self.mean < 1e150:  # beyond, (sd/mean)² overflows
            raise ValueError(f"lognormal: sd / mean = {self.sd / self.mean:.3g} is too large (its σ² = ln(1 + (sd/mean)²) overflows)")
        return self


class Lognormal(_Dist):
    lognormal: LognormalParams

    def mean(self) -> float:
        return self.lognormal.mean

    def engine(self) -> dict:
        return {"kind": "lognormal", "mean": self.lognormal.mean, "sd": self.lognormal.sd}


class Weighted(_Strict):
    values: list[NonNeg] = Field(min_length=1)
    weights: list[Pos] | None = None

    @model_validator(mode="after")
    def _same_length(self):
        if self.weights is not None and len(self.weights) != len(self.values):
            raise ValueError(f"empirical: {len(self.values)} values but {len(self.weights)} weights; give one weight per value")
        return self


class Empirical(_Dist):
    empirical: Annotated[list[NonNeg], Field(min_length=1)] | Weighted

    def _vw(self) -> tuple[list[float], list[float]]:
        """Values and weights; weights whose sum overflows scaled to a largest of 1
        (weights near the largest float summed to infinity: every share was NaN)."""
        e = self.empirical
        if isinstance(e, Weighted) and e.weights:
            top = max(e.weights)
            return e.values, e.weights if math.isfinite(sum(e.weights)) else [w / top for w in e.weights]
        values = e.values if isinstance(e, Weighted) else e
        return values, [1.0] * len(values)

    def mean(self) -> float:
        v, w = self._vw()
        return sum(a * b for a, b in zip(v, w)) / sum(w)

    def engine(self) -> dict:
        v, w = self._vw()
        total, acc, cum = sum(w), 0.0, []
        for x in w:
            acc += x
            cum.append(acc / total)
        cum[-1] = 1.0
        return {"kind": "empirical", "values": v, "cumulative": cum}


_KINDS = {"constant", "exponential", "uniform", "normal", "lognormal", "empirical"}


def _kind(v: Any) -> str | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return "number"
    if isinstance(v, dict) and len(v) == 1:
        k = next(iter(v))
        return k if k in _KINDS else None
    if isinstance(v, BaseModel):
        return type(v).__name__.lower()
    return None


Dist = Annotated[
    Annotated[NonNeg, Tag("number")]
    | Annotated[Constant, Tag("constant")]
    | Annotated[Exponential, Tag("exponential")]
    | Annotated[Uniform, Tag("uniform")]
    | Annotated[Normal, Tag("normal")]
    | Annotated[Lognormal, Tag("lognormal")]
    | Annotated[Empirical, Tag("empirical")],
    Discriminator(
        _kind,
        custom_error_type="distribution",
        custom_error_message="expected a number or a one-key mapping {constant|exponential|uniform|normal|lognormal|empirical: ...}",
    ),
]


def as_model(d: float | _Dist) -> _Dist:
    return Constant(constant=float(d)) if isinstance(d, (int, float)) else d


def engine(d) -> dict:
    return as_model(d).engine()


def mean(d) -> float:
    return as_model(d).mean()
