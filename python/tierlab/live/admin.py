"""The loopback admin endpoints of a running testbed: each bookstore server's (its pools,
their metrics and windows, its phase records) and each cluster proxy's (its dispatch
summary). Clients only: starting and stopping the processes is `lifecycle`, running a
model on them `testbed`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd

from ..errors import InputError


class ServerGone(InputError):
    """The bookstore's admin endpoint does not answer: the server ended (or never started)."""


class Admin:
    """A bookstore server's loopback admin endpoint on `port`, with the testbed's token
    (in `workdir`)."""

    def __init__(self, workdir: str | Path, port: int):
        self.base = f"http://127.0.0.1:{port}"
        self.token = (Path(workdir) / "token").read_text().strip()

    def ping(self) -> None:
        self.metrics()

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        req = urllib.request.Request(
            self.base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise InputError(f"admin {path}: {json.loads(e.read()).get('error', e.reason)}") from None
        except OSError as e:  # refused, reset, timed out: the server is not there
            reason = getattr(e, "reason", e)
            raise ServerGone(f"the bookstore's admin endpoint {self.base} does not answer ({reason}); is the testbed up? (`tierlab live status`)") from None

    def metrics(self) -> dict:
        return self._call("GET", "/metrics")

    def configure(self, settings: dict) -> dict:
        """Set pools: {"threads": {"size": …, …}, "connections": {…}} (see `serve`)."""
        return self._call("POST", "/config", settings)

    def forget_sessions(self) -> None:
        """Every session's state dropped (the bookstore's, the proxy's homes)."""
        self._call("POST", "/sessions/forget", {})

    def forget_keys(self) -> None:
        """The bookstore's key counters seeded from the tables again (after the data were
        restored beneath them: `data.restore`)."""
        self._call("POST", "/keys/forget", {})

    def observe(self, origin: float, window: float) -> None:
        self._call("POST", "/observe", {"origin": origin, "window": window})

    def drain(self, windows: int = 0) -> tuple[pd.DataFrame, dict]:
        """The phase records since the last drain, and the observation's first windows."""
        out = self._call("POST", "/drain", {"windows": windows})
        return pd.DataFrame(out["records"]), out["windows"]


class ProxyAdmin(Admin):
    """A cluster proxy's loopback admin endpoint (crates/proxy/README.md)."""

    def ping(self) -> None:
        self.summary()

    def summary(self) -> dict:
        """`{"dispatch": DispatchSummary, "proxy": live-only counts}` since it started."""
        return self._call("GET", "/summary")
