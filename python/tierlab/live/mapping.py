"""The HTTP side of a workload: which HTTP request each request type of a model is,
with values drawn per session or per request. A YAML file, validated here and compiled
for the load generator.

```yaml
target: 127.0.0.1:8080          # HOST:PORT; `tierlab load --target` overrides it
timeout: 10                      # seconds before the client gives up on a request
values:
  customer: {int: [1, 2880]}                 # drawn when a session starts (the default)
  item: {int: [1, 1000], per: request}       # drawn for every request
  word: {choice: [war, peace], per: request}
requests:
  HOME: {path: "/home?c_id={customer}"}
  BUYC: {method: POST, path: /buy_confirm, form: {c_id: "{customer}"}}
```
A `{name}` in a path or form value is replaced by the value, percent-encoded.
Cookies the server sets are kept per session and sent back.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from ..errors import ModelError
from ..model import read_yaml

_HOLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Value(_Strict):
    integer: tuple[int, int] | None = Field(None, alias="int", description="uniform integer in [low, high]")
    choice: list[str] | None = Field(None, min_length=1, description="one of these, uniformly")
    per: Literal["session", "request"] = "session"

    @model_validator(mode="after")
    def _one_kind(self):
        if (self.integer is None) == (self.choice is None):
            raise ValueError("give exactly one of `int: [low, high]` or `choice: [...]`")
        if self.integer is not None and self.integer[0] > self.integer[1]:
            raise ValueError(f"int range {list(self.integer)} is empty: low must be ≤ high")
        return self

    def compiled(self) -> dict:
        draw = {"kind": "int", "low": self.integer[0], "high": self.integer[1]} if self.integer else {"kind": "choice", "options": self.choice}
        return {"per": self.per, "draw": draw}


class HttpRequest(_Strict):
    method: Literal["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"] = "GET"
    path: str
    form: dict[str, str] = {}

    @field_validator("path")
    @classmethod
    def _origin_form(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError(f"path {v!r} must start with '/' (the target's host and port come from `target`)")
        return _no_spaces(v)

    @field_validator("form")
    @classmethod
    def _form_names(cls, v: dict[str, str]) -> dict[str, str]:
        for name in v:
            _no_spaces(name)
        return v


def _no_spaces(text: str) -> str:
    """Literal text goes into the request line as it is: no spaces or control characters."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text):
        raise ValueError(f"{text!r} has a space or control character; write a space as %20 or + (drawn values are encoded for you)")
    return text


class Mapping(_Strict):
    target: str = "127.0.0.1:8080"
    timeout: float = Field(10.0, gt=0)
    values: dict[str, Value] = {}
    requests: dict[str, HttpRequest]
    # The file it was read from, which its errors name (None: built from a mapping).
    _source: str | None = PrivateAttr(None)

    @property
    def source(self) -> str | None:
        return self._source

    def holes(self) -> list[tuple[str, str]]:
        """(field path, value name) of every placeholder."""
        out = []
        for name, r in self.requests.items():
            out += [(f"requests.{name}.path", h) for h in _HOLE.findall(r.path)]
            for field, text in r.form.items():
                out += [(f"requests.{name}.form.{field}", h) for h in _HOLE.findall(text)]
        return out


def load_mapping(source: str | Path | dict) -> Mapping:
    where = str(source) if isinstance(source, (str, Path)) else None
    data = source
    if isinstance(source, (str, Path)):
        data = read_yaml(Path(source), "HTTP mapping")
    try:
        m = Mapping.model_validate(data)
    except ValidationError as e:
        raise ModelError([(".".join(map(str, err["loc"])), err["msg"]) for err in e.errors()], where) from None
    unknown = [
        (field, f"{{{h}}} names no value; define it under `values` (defined: {', '.join(m.values) or 'none'})") for field, h in m.holes() if h not in m.values
    ]
    if unknown:
        raise ModelError(unknown, where)
    m._source = where
    return m


def _template(text: str, names: list[str]) -> list:
    """'/item?i={item}' → ['/item?i=', index of item]."""
    pieces: list[str | int] = []
    at = 0
    for hole in _HOLE.finditer(text):
        if hole.start() > at:
            pieces.append(text[at : hole.start()])
        pieces.append(names.index(hole.group(1)))
        at = hole.end()
    if at < len(text):
        pieces.append(text[at:])
    return pieces


def compile_requests(m: Mapping, type_names: list[str]) -> tuple[list[dict], list[dict]]:
    """The per-type HTTP requests (in the model's type order) and the value specs."""
    missing = [t for t in type_names if t not in m.requests]
    extra = [t for t in m.requests if t not in type_names]
    problems = [(f"requests.{t}", "the model has this request type but the mapping does not say which HTTP request it is") for t in missing]
    problems += [(f"requests.{t}", f"the model has no request type {t!r} (types: {', '.join(type_names)})") for t in extra]
    if problems:
        raise ModelError(problems, m.source)
    names = list(m.values)
    requests = [
        {"method": r.method, "path": _template(r.path, names), "form": [[k, _template(v, names)] for k, v in r.form.items()]}
        for r in (m.requests[t] for t in type_names)
    ]
    return requests, [v.compiled() for v in m.values.values()]
