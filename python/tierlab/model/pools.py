"""Which pools of a model a sizing (or a live server) sets: the tier with one
`threads` pool and one `connections` pool — Totok & Karamcheti's M and N; and a tier's
pool of its clients' connections (`hold: session`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from . import LoadedModel
    from .spec import Tier


def held_by_sessions(tier: Tier) -> str | None:
    """The tier's pool held by sessions (`hold: session`: its clients' connections), if any."""
    return next((p for p, s in tier.pools.items() if s.hold == "session"), None)


@dataclass
class PoolSetting:
    """Where M and N live in the model."""

    tier: str
    threads: str
    connections: str

    def changes(self, M: int, N: int) -> dict:
        pools = f"tiers.{self.tier}.pools"
        return {f"{pools}.{self.threads}.size": M, f"{pools}.{self.connections}.size": N}

    @classmethod
    def find(cls, model: LoadedModel, tier: str | None = None) -> PoolSetting:
        """The tier with one `threads` and one `connections` pool (or the named tier)."""
        found = []
        for name, t in model.spec.tiers.items():
            threads = [p for p, s in t.pools.items() if s.kind == "threads"]
            conns = [p for p, s in t.pools.items() if s.kind == "connections"]
            if (tier is None or name == tier) and len(threads) == 1 and len(conns) == 1:
                found.append(cls(name, threads[0], conns[0]))
        if len(found) != 1:
            what = f"tier {tier!r}" if tier else "exactly one tier"
            raise InputError(
                f"sizing the pools (or setting them on the live server) needs {what} with one `threads` pool and one `connections` pool (found {len(found)}); name it with --tier"
            )
        return found[0]
