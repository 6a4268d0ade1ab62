"""The number types of every model field, defined once: finite (no `.inf`, no `.nan`),
never a boolean or a text (YAML's `true` is not 1), and integers within the Rust type
the engine reads them into. The limits of the model as a whole (memory, events) are
in `limits`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field


def _not_bool_or_text(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError(f"a number is needed, not the boolean {str(v).lower()}")
    if isinstance(v, str):
        raise ValueError(f"a number is needed, not the text {v!r}")
    return v


# The simulated clock is an f64: at 1e9 s its resolution is 0.1 µs, finer than any
# service time; beyond it events of a request would share an instant.
MAX_SECONDS = 1e9

Number = Annotated[float, BeforeValidator(_not_bool_or_text), Field(allow_inf_nan=False)]
NonNeg = Annotated[Number, Field(ge=0)]
Pos = Annotated[Number, Field(gt=0)]
Seconds = Annotated[Number, Field(ge=0, le=MAX_SECONDS)]
PosSeconds = Annotated[Number, Field(gt=0, le=MAX_SECONDS)]

Integer = Annotated[int, BeforeValidator(_not_bool_or_text)]
U32 = Annotated[Integer, Field(ge=0, le=2**32 - 1)]
PosU32 = Annotated[Integer, Field(ge=1, le=2**32 - 1)]
I32 = Annotated[Integer, Field(ge=-(2**31), le=2**31 - 1)]
U64 = Annotated[Integer, Field(ge=0, le=2**64 - 1)]
# Servers and dispatchers per tier: each is a structure the engine allocates up front
# (crates/sim model.rs MAX_SERVERS).
Servers = Annotated[Integer, Field(ge=1, le=1_000_000)]
