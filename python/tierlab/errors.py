"""Errors a user can act on: each names the field (as a path into the model) and the fix."""

from __future__ import annotations


class ModelError(ValueError):
    """The model file is invalid. ``problems`` lists (field path, message) pairs."""

    def __init__(self, problems: list[tuple[str, str]], source: str | None = None):
        self.problems = problems
        self.source = source
        where = f" in {source}" if source else ""
        lines = [f"  {path or '<model>'}: {msg}" for path, msg in problems]
        super().__init__(f"invalid model{where}:\n" + "\n".join(lines))

    def __reduce__(self):
        # Rebuilt from its own arguments, not the message: a sweep's worker process sends
        # it back pickled, and unpickling by the message alone raised in the pool's result
        # thread, which hung the sweep instead of reporting the error.
        return (type(self), (self.problems, self.source))


class TierlabWarning(UserWarning):
    """What tierlab tells a user about a result it still gives (a short run, a far mix):
    the base of its own warnings, so a test suite that turns every other warning into an
    error can let these through (pyproject's filterwarnings)."""


class ModelWarning(TierlabWarning):
    """The model is valid but probably not what was meant (e.g. an overloaded open workload)."""


class EngineError(RuntimeError):
    """The engine failed on a model that passed every check (a Rust panic, caught by
    the bindings): a bug in tierlab, to be reported with the model."""


class TraceError(ValueError):
    """A trace folder is missing a table or has the wrong columns."""


class InputError(ValueError):
    """Another input is wrong (a measurement table, a profile, an option, a missing
    optional dependency); the message names the row or field and the fix."""


def field_path(loc: tuple) -> str:
    """A validation error's location as a dotted path: `tiers.app.pools[0].size`."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
