"""Where a session's state lives (the cart it shops with, its visit count): the
bookstore's HttpSession. `LocalSessions` keeps it in this server's memory only — a
session served elsewhere starts afresh there, which is why a stateful cluster needs
affinity. `RedisSessions` (the model's `session_state`) keeps the state in memory
with a copy in Redis that names the session's home server; a request served away
from its home fetches the copy and becomes its home (session virtualization, Dutta
et al.): a migration, counted by the server that fetched, as the simulator counts it
on entering a server."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Protocol

# States held in memory per server: sessions idle long enough are forgotten first
# (an emulated browser's session lasts minutes; this is thousands of them).
MAX_LOCAL = 100_000
# Seconds Redis keeps an idle session's copy (the proxy forgets sessions after 1800 s).
TTL = 1800


class SessionStore(Protocol):
    created: int
    migrations: int

    def load(self, session: str) -> dict:
        """The session's state ({} for a new one), fetched if its home is elsewhere."""

    def save(self, session: str, state: dict) -> None:
        """The state after a request: this server is now the session's home."""

    def forget(self) -> None:
        """Drop every session's state (a new measured run starts with none)."""


class LocalSessions:
    """In-process: the state of the sessions this server has served."""

    def __init__(self) -> None:
        self.created = self.migrations = 0
        self._states: OrderedDict[str, dict] = OrderedDict()
        self._lock = threading.Lock()

    def load(self, session: str) -> dict:
        with self._lock:
            state = self._states.get(session)
            if state is None:
                self.created += 1
                return {}
            self._states.move_to_end(session)
            return dict(state)

    def forget(self) -> None:
        with self._lock:
            self._states.clear()

    def save(self, session: str, state: dict) -> None:
        with self._lock:
            self._states[session] = dict(state)
            self._states.move_to_end(session)
            while len(self._states) > MAX_LOCAL:
                self._states.popitem(last=False)


class RedisSessions(LocalSessions):
    """In memory, with a copy and the home server in Redis (one hash per session): one
    round trip to check the home before a request, one to write the state after it."""

    def __init__(self, url: str, server: str):
        import redis  # only a cluster with `session_state` needs the package

        super().__init__()
        self.server = server.encode()
        self.redis = redis.Redis.from_url(url)
        self.redis.ping()  # fail at start, naming the URL, not on the first request

    @staticmethod
    def _key(session: str) -> str:
        return f"tierlab:session:{session}"

    def load(self, session: str) -> dict:
        home, copy = self.redis.hmget(self._key(session), ["home", "state"])
        if home is None:  # new everywhere (the local copy of an expired one is stale)
            with self._lock:
                self.created += 1
            return {}
        if home == self.server:
            with self._lock:
                local = self._states.get(session)
            if local is not None:
                return dict(local)
        else:
            with self._lock:
                self.migrations += 1
        return json.loads(copy) if copy else {}

    def forget(self) -> None:
        super().forget()
        keys = list(self.redis.scan_iter(match=self._key("*"), count=1000))
        if keys:
            self.redis.delete(*keys)

    def save(self, session: str, state: dict) -> None:
        super().save(session, state)
        key = self._key(session)
        with self.redis.pipeline(transaction=False) as p:
            p.hset(key, mapping={"home": self.server, "state": json.dumps(state)})
            p.expire(key, TTL)
            p.execute()


def session_store(url: str | None, server: str) -> SessionStore:
    """Redis at `url` (redis://HOST:PORT/DB), else in-process."""
    return RedisSessions(url, server) if url else LocalSessions()
