"""The dispatcher proxy as a process: `python -m tierlab.live.proxy CONFIG.json
[--threads N]` serves until SIGINT or SIGTERM, then writes its summary and decision
log (crates/proxy/README.md). It runs from the `_core` extension that `pip install`
builds, so a cluster needs no separately built `tierlab-proxy` binary."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass

from .. import _core
from ..errors import InputError

# Gradient2's defaults (Netflix concurrency-limits' `Gradient2Limit.Builder`): its
# windows are one-second samples, the limit's interval here.
GRADIENT2 = {"strategy": "gradient", "smoothing": 0.2, "queue": 4.0, "tolerance": 1.5, "long_window": 600, "warmup": 10}


@dataclass(frozen=True)
class Limit:
    """The proxy's per-backend limit on requests in flight (its configuration's `limit`,
    crates/proxy/README.md): a request placed on a backend holding `size` is answered 503
    with `Retry-After: retry_after`. With `bounds`, Gradient2 (crates/control, the
    controller `tierlab control` runs) re-sizes each backend's limit within them every
    `interval` seconds, starting from `size`."""

    size: int
    bounds: tuple[int, int] | None = None
    retry_after: int = 1
    interval: float = 1.0

    @classmethod
    def parse(cls, text: str) -> Limit:
        """`16` (fixed) or `16:2..64` (Gradient2 within 2..64, from 16); an InputError
        naming `--proxy-limit` otherwise."""
        m = re.fullmatch(r"(\d+)(?::(\d+)\.\.(\d+))?", text.strip())
        if m is None:
            raise InputError(f"--proxy-limit: {text!r} is not SIZE or SIZE:LEAST..GREATEST (Gradient2 within the bounds), e.g. 16 or 16:2..64")
        size = int(m[1])
        bounds = (int(m[2]), int(m[3])) if m[2] else None
        if size < 1 or (bounds is not None and not 1 <= bounds[0] <= bounds[1]):
            raise InputError(f"--proxy-limit: {text!r}: need SIZE ≥ 1 and 1 ≤ LEAST ≤ GREATEST")
        return cls(size, bounds)

    def config(self) -> dict:
        """The proxy configuration's `limit` object."""
        out: dict = {"size": self.size, "retry_after": self.retry_after}
        if self.bounds is not None:
            out["control"] = {"interval": self.interval, "bounds": {"threads": list(self.bounds)}, "strategy": GRADIENT2}
        return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="tierlab's dispatcher proxy (crates/proxy)")
    ap.add_argument("config", help="the proxy's JSON configuration")
    ap.add_argument("--threads", type=int, default=None, help="runtime threads (default: one per core)")
    a = ap.parse_args(argv)
    try:
        _core.serve_proxy(a.config, a.threads)
    except ValueError as e:  # a bad configuration: the proxy names the field
        sys.exit(f"tierlab-proxy: {e}")


if __name__ == "__main__":
    main()
