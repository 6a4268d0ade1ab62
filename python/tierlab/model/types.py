"""The number types of every model field, defined once: finite (no `.inf`, no `.nan`),
never a boolean or a text (YAML's `true` is not 1), and integers within the Rust type
the engine reads them into. The limits of the model as a whole (memory, events) are
in `limits`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from .._core import MAX_SERVERS


def _not_bool_or_text(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError(f"a number is needed, not the boolean {str(v).lower()}")
    if isinstance(v, str):
        raise ValueError(f"a number is needed, not the text {v!r}")
    return v


# The simulated clock is an f64: at 1e9 s its resolution is 0.1 µs, finer than any
# service time; beyond it events of a request would share an instant.
MAX_SECONDS = 1e9

# A field's constraints come before NUMBER in its Annotated (a constraint after a
# validator would drop out of the JSON schema): Annotated[Finite, Field(gt=0), NUMBER].
Finite = Annotated[float, Field(allow_inf_nan=False)]
NUMBER = BeforeValidator(_not_bool_or_text)

Number = Annotated[Finite, NUMBER]
NonNeg = Annotated[Finite, Field(ge=0), NUMBER]
Pos = Annotated[Finite, Field(gt=0), NUMBER]
Seconds = Annotated[Finite, Field(ge=0, le=MAX_SECONDS), NUMBER]
PosSeconds = Annotated[Finite, Field(gt=0, le=MAX_SECONDS), NUMBER]

U32 = Annotated[int, Field(ge=0, le=2**32 - 1), NUMBER]
PosU32 = Annotated[int, Field(ge=1, le=2**32 - 1), NUMBER]
I32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1), NUMBER]
U64 = Annotated[int, Field(ge=0, le=2**64 - 1), NUMBER]
# Servers and dispatchers per tier: each is a structure the engine allocates up front
# (crates/sim model.rs MAX_SERVERS).
Servers = Annotated[int, Field(ge=1, le=MAX_SERVERS), NUMBER]  # the engine's own limit
