"""The dispatcher proxy as a process: `python -m tierlab.live.proxy CONFIG.json
[--threads N]` serves until SIGINT or SIGTERM, then writes its summary and decision
log (crates/proxy/README.md). It runs from the `_core` extension that `pip install`
builds, so a cluster needs no separately built `tierlab-proxy` binary."""

from __future__ import annotations

import argparse
import sys

from .. import _core


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
