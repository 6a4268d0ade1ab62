"""Names a package exports but imports on first use (PEP 562), so that importing the
package — or one light module of it — does not load pandas, pydantic or numpy."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_exports(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `homes` maps each exported name to the
    submodule (relative to `package`) that defines it."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f".{homes[name]}", package), name)

    return __getattr__
