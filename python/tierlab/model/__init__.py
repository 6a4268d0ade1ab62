"""The model: YAML validated by pydantic (`spec`), compiled to the engine's input."""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import ModelError, ModelWarning, field_path
from .chain import ChainData, read_chain
from .compile import Compiled, compile_model
from .spec import Model


@dataclass(frozen=True)
class LoadedModel:
    """A validated model: the one value every layer below the CLI takes. Its chain is
    read from disk once and its engine input compiled once, at first use (both cached
    on the value, and carried to a copy whose chain did not change), so a command that
    runs a model many times reads and compiles it once per distinct model."""

    spec: Model
    base_dir: Path
    source: str | None = None

    @cached_property
    def chain(self) -> tuple[ChainData | None, list[tuple[str, str]]]:
        """The workload's chain as read (a CSV from `base_dir`, or inline), and the
        problems found reading it."""
        return read_chain(self.spec.workload.chain, self.base_dir)

    @cached_property
    def compiled(self) -> Compiled:
        """The engine input; raises ModelError (the problems of the whole model)."""
        c = compile_model(self.spec, self.chain)
        if c.problems:
            raise ModelError(c.problems, self.source)
        return c

    def engine(self) -> dict:
        """The engine input; raises ModelError, and warns (ModelWarning) about overload."""
        c = self.compiled
        for w in c.warnings:
            warnings.warn(w, ModelWarning, stacklevel=3)
        return c.engine

    def session_rate_bound(self) -> float | None:
        """Sessions/s at which the busiest CPU reaches 100% (an upper bound on the
        session throughput: overhead, disks and pools not counted); None if sessions
        never end."""
        return self.compiled.session_rate_bound

    def with_changes(self, changes: Mapping[str, Any]) -> LoadedModel:
        """A copy with values replaced at dotted paths of the model file, e.g.
        ``{"tiers.app.pools.db.size": 8, "workload.population.session_rate": 2.5}`` —
        how sweeps vary a model. A path must name a field the model has."""
        if not changes:
            return self
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
        changed = LoadedModel(spec, self.base_dir, self.source)
        if spec.workload.chain == self.spec.workload.chain and "chain" in self.__dict__:
            changed.__dict__["chain"] = self.chain  # the same file: not read again
        return changed

    def with_run(self, **changes: Any) -> LoadedModel:
        """A copy with run settings (seed, duration, …) replaced; None values are ignored."""
        return self.with_changes({f"run.{k}": v for k, v in changes.items() if v is not None})


# Deeper than this a YAML file is no model: a real one nests about a dozen levels, and
# loops nested much deeper outgrow the parsers after it (PyYAML's and pydantic's
# recursion, the engine's JSON reader at 128 levels, which would cite a line and column
# of its own input rather than of the file).
MAX_NESTING = 64


class _Loader(yaml.SafeLoader):
    """PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent
    (`1.0e+9`): `1e-9` and `1.0e9` would be texts. As YAML 1.2 and editors do, read
    them as numbers (the model's number fields refuse texts). A key given twice in one
    mapping is an error (PyYAML keeps the last silently: `{size: 20, size: 1}` was a
    pool of 1), and so is nesting deeper than MAX_NESTING."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self._depth >= MAX_NESTING:
            raise yaml.composer.ComposerError(None, None, f"nested more than {MAX_NESTING} levels deep; no model needs that", self.peek_event().start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        # Keys merged in from an anchor (`<<: *x`) may be overridden: only the keys
        # written in this mapping itself must differ.
        seen: dict[Any, yaml.Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark)
            except TypeError:
                continue  # an unhashable key: the base class reports it
            if first is not key_node.start_mark:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    f"found the key {key!r} twice (first on line {first.line + 1}, column {first.column + 1}); give each key once",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def load_yaml(text: str, name: str | None = None) -> Any:
    """A model file's YAML, with `1e-9` and `1.0e9` read as numbers (YAML 1.2); a
    duplicated key or too deep a nesting is a yaml.YAMLError naming the line (and the
    file, `name`)."""
    loader = _Loader(text)
    if name is not None:
        loader.name = name  # the marks of its errors cite it
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_yaml(path: Path, what: str = "model") -> Any:
    """The YAML file at `path` (a model, an HTTP mapping, a twin), read by `load_yaml`;
    a missing, unreadable, binary or invalid file is a ModelError naming it and the line."""
    name = str(path)
    if not path.is_file():
        raise ModelError([("", f"{what} file not found: {path}")], name)
    try:
        return load_yaml(path.read_text(encoding="utf-8"), name)
    except UnicodeDecodeError as e:
        raise ModelError([("", f"not a text (UTF-8) file: byte {e.start} cannot be decoded")], name) from None
    except OSError as e:
        raise ModelError([("", f"cannot read the file: {e.strerror}")], name) from None
    except yaml.YAMLError as e:
        raise ModelError([("", f"not valid YAML: {e}")], name) from None


def _nesting(data: Any) -> int:
    """How deep lists and mappings nest in `data` (iterative: any depth is measured)."""
    deepest, stack = 0, [(data, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth + 1)
            if deepest > MAX_NESTING:
                return deepest
            stack += [(v, depth + 1) for v in (node.values() if isinstance(node, dict) else node)]
    return deepest


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
        name = str(path)
        base_dir = base_dir or path.parent
        source = read_yaml(path)
    if isinstance(source, dict):
        if _nesting(source) > MAX_NESTING:
            raise ModelError([("", f"lists and mappings nested more than {MAX_NESTING} levels deep; no model needs that")], name)
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


__all__ = ["Model", "LoadedModel", "ModelWarning", "load_model", "load_yaml", "read_yaml", "json_schema"]
