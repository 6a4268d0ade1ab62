"""The model: YAML validated by pydantic (`spec`), compiled to the engine's input."""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import ModelError, ModelWarning, field_path
from .compile import Compiled, compile_model
from .spec import Model


@dataclass
class LoadedModel:
    spec: Model
    base_dir: Path
    source: str | None = None

    def engine(self) -> dict:
        """The engine input; raises ModelError, and warns (ModelWarning) about overload."""
        c = self._compiled()
        for w in c.warnings:
            warnings.warn(w, ModelWarning, stacklevel=3)
        return c.engine

    def session_rate_bound(self) -> float | None:
        """Sessions/s at which the busiest CPU reaches 100% (an upper bound on the
        session throughput: overhead, disks and pools not counted); None if sessions
        never end."""
        return self._compiled().session_rate_bound

    def _compiled(self) -> Compiled:
        c = compile_model(self.spec, self.base_dir)
        if c.problems:
            raise ModelError(c.problems, self.source)
        return c

    def with_changes(self, changes: Mapping[str, Any]) -> LoadedModel:
        """A copy with values replaced at dotted paths of the model file, e.g.
        ``{"tiers.app.pools.db.size": 8, "workload.population.session_rate": 2.5}`` —
        how sweeps vary a model. A path must name a field the model has."""
        full = self.spec.model_dump()
        data = self.spec.model_dump(exclude_unset=True)
        for path, value in changes.items():
            *parents, last = path.split(".")
            node, into = full, data
            for i, key in enumerate(parents + [last]):
                if not isinstance(node, dict) or key not in node:
                    known = ", ".join(map(str, node)) if isinstance(node, dict) else "none"
                    where = ".".join(parents[:i] + [key])
                    raise ModelError([(path, f"the model has no {where!r} to change (there: {known})")], self.source)
                node = node[key]
                if i < len(parents):
                    into = into.setdefault(key, {})
            into[last] = value
        try:
            spec = Model.model_validate(data)
        except ValidationError as e:
            raise _model_error(e, self.source, data) from None
        return LoadedModel(spec, self.base_dir, self.source)

    def with_run(self, **changes: Any) -> LoadedModel:
        """A copy with run settings (seed, duration, …) replaced; None values are ignored."""
        return self.with_changes({f"run.{k}": v for k, v in changes.items() if v is not None})


class _Loader(yaml.SafeLoader):
    """PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent
    (`1.0e+9`): `1e-9` and `1.0e9` would be texts. As YAML 1.2 and editors do, read
    them as numbers (the model's number fields refuse texts)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def load_yaml(text: str) -> Any:
    """A model file's YAML, with `1e-9` and `1.0e9` read as numbers (YAML 1.2)."""
    return yaml.load(text, Loader=_Loader)


def _model_error(e: ValidationError, source: str | None, data: Any) -> ModelError:
    """The validation errors by field path, one per field (a union reports each of its
    members: the first, the plain form, is kept)."""
    problems: dict[str, str] = {}
    for err in e.errors():
        problems.setdefault(field_path(_in_data(err["loc"], data, err["type"] == "missing")), err["msg"])
    return ModelError(list(problems.items()), source)


def _in_data(loc: tuple, data: Any, missing: bool) -> tuple:
    """The parts of an error location that index the model file: pydantic adds the
    union member tried (a discriminator value, `float`, `list[…]`), which is not in it.
    A `missing` field's name, the last part, is kept. A tag that is also a key of the
    mapping (a step's `cpu`) is the tag when the part after it is a key beside it, not
    under it: `[1].cpu.contention` is the step's `contention`."""

    def at(node: Any, part: Any) -> bool:
        return isinstance(node, dict) and part in node or isinstance(node, list) and isinstance(part, int) and -len(node) <= part < len(node)

    out, node = [], data
    for i, part in enumerate(loc):
        after = loc[i + 1] if i + 1 < len(loc) else None
        tag = after is not None and at(node, after) and at(node, part) and not at(node[part], after)
        if at(node, part) and not tag:
            node = node[part]
            out.append(part)
        elif missing and i == len(loc) - 1:
            out.append(part)
    return tuple(out)


def load_model(source: str | Path | dict | Model | LoadedModel, base_dir: Path | None = None) -> LoadedModel:
    """Load a model from a YAML file path, a YAML/JSON mapping, or a pydantic Model.

    Relative paths inside the model (chain CSVs) resolve against the file's folder, or
    `base_dir`, or the current directory."""
    if isinstance(source, LoadedModel):
        return source
    name = None
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise ModelError([("", f"model file not found: {path}")], str(path))
        name = str(path)
        base_dir = base_dir or path.parent
        try:
            source = load_yaml(path.read_text())
        except yaml.YAMLError as e:
            raise ModelError([("", f"not valid YAML: {e}")], name) from None
    if isinstance(source, dict):
        # Top-level `x-…` keys hold YAML anchors for reuse (as in docker-compose files).
        source = {k: v for k, v in source.items() if not str(k).startswith("x-")}
        try:
            source = Model.model_validate(source)
        except ValidationError as e:
            raise _model_error(e, name, source) from None
    if not isinstance(source, Model):
        raise ModelError([("", f"expected a mapping at the top level, got {type(source).__name__}")], name)
    return LoadedModel(source, Path(base_dir or Path.cwd()), name)


def json_schema() -> dict:
    return Model.model_json_schema()


__all__ = ["Model", "LoadedModel", "ModelWarning", "load_model", "load_yaml", "json_schema"]
