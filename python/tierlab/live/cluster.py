"""The cluster form of the live testbed, driven by a model: K bookstore servers (the
app tier's `servers`), P dispatcher proxies in front of them running the tier's
`dispatch:` policy (P = its `dispatchers`; `shared` ones exchange load metrics over
UDP, `hierarchical` ones each own a block of servers), one database, and — when the
tier has `session_state` — Redis as the external session store.

The proxies run as `python -m tierlab.live.proxy` from the `_core` extension that
`pip install` builds (no separately built binary); their configuration, decision log
and summary are files `proxy-<i>.*` in the working folder."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ..errors import InputError
from ..model import LoadedModel
from ..model.pools import PoolSetting
from .admin import Admin, ProxyAdmin
from .lifecycle import REDIS_SCRIPT, Server, State, await_admin, database, free_ports, prepare, save, server_command, service_script, spawn
from .proxy import Limit


def up_cluster(
    model: LoadedModel,
    workdir: str | Path = ".tierlab/live",
    *,
    db: str = "sqlite",
    port: int | None = None,
    tier: str | None = None,
    num_items: int = 1000,
    num_ebs: int = 1,
    log=print,
    server: Server = "python",
    limit: Limit | None = None,
) -> State:
    """Start the cluster of `model`'s app tier (the one with a threads and a connections
    pool, or `tier`): the first proxy listens on `port` (default: a free one), every
    other port is chosen free. The servers' pools start at the model's sizes; with
    `limit`, every proxy limits each backend's requests in flight so."""
    loaded = model
    setting = PoolSetting.find(loaded, tier)
    spec = loaded.spec.tiers[setting.tier]
    engine = loaded.engine()
    dispatch = next(t["dispatch"] for t in engine["tiers"] if t["name"] == setting.tier)
    k, p = spec.servers, dispatch["dispatchers"]
    if server == "java" and spec.session_state is not None:  # before anything starts
        raise InputError(
            "the JVM bookstore keeps session state in its own memory only; a cluster with `session_state` needs the Python server (`--server python`)"
        )
    workdir = prepare(workdir, [(port, "--port")] if port else [])
    url = database(workdir, db, num_items, num_ebs, log)
    sessions = service_script(REDIS_SCRIPT, "start", workdir / "redis", "Redis") if spec.session_state is not None else None
    pools = spec.pools
    threads, connections = pools[setting.threads].size, pools[setting.connections].size
    caching = pools[setting.connections].caching
    state = State(0, 0, 0, url, db, str(workdir), "", tier=setting.tier, server=server, sessions=sessions)
    for i in range(k):
        sport, admin = free_ports(2)
        extra = ["--server", str(i), "--servers", str(k), *(["--sessions", sessions] if sessions else [])]
        logfile = workdir / f"server-{i}.log"
        pid = spawn(server_command(server, workdir, url, sport, admin, threads, connections, caching, *extra, log=log), logfile)
        state.servers.append({"pid": pid, "port": sport, "admin_port": admin, "log": str(logfile)})
    first = state.servers[0]
    state.pid, state.port, state.admin_port, state.log = first["pid"], first["port"], first["admin_port"], first["log"]
    save(state)
    backends = [f"127.0.0.1:{m['port']}" for m in state.servers]
    sync_ports = free_ports(p) if p > 1 and not dispatch["hierarchical"] else []
    types = [t["name"] for t in engine["types"]]
    origin = time.time()
    for i in range(p):
        pport, admin = free_ports(2)
        pport = port if i == 0 and port else pport
        config = {
            "listen": f"127.0.0.1:{pport}",
            "backends": _block(backends, i, p) if dispatch["hierarchical"] else backends,
            "policy": dispatch["policy"],
            "seed": loaded.spec.run.seed + i,
            "types": {"header": "x-tierlab-type", "names": types},
            "queue": {"size": dispatch["queue"], "timeout": dispatch["queue_timeout"]},
            "admin": {"listen": f"127.0.0.1:{admin}", "token_file": str(workdir / "token")},
            "decisions": str(workdir / f"proxy-{i}.decisions.jsonl"),
            "summary": str(workdir / f"proxy-{i}.summary.json"),
        }
        if limit is not None:
            config["limit"] = limit.config()
        if sync_ports:
            config["sync"] = {
                "listen": f"127.0.0.1:{sync_ports[i]}",
                "peers": [f"127.0.0.1:{q}" for j, q in enumerate(sync_ports) if j != i],
                "interval": dispatch["sync_interval"],
                "delay": dispatch["sync_delay"],
                "origin_unix": origin,
            }
        conf = workdir / f"proxy-{i}.json"
        conf.write_text(json.dumps(config, indent=2))
        logfile = workdir / f"proxy-{i}.log"
        pid = spawn([sys.executable, "-m", "tierlab.live.proxy", str(conf), "--threads", "1"], logfile)
        state.proxies.append({"pid": pid, "port": pport, "admin_port": admin, "log": str(logfile), "decisions": config["decisions"]})
        save(state)
    admins = [Admin(workdir, m["admin_port"]) for m in state.servers] + [ProxyAdmin(workdir, m["admin_port"]) for m in state.proxies]
    await_admin(state, admins, Path(state.log))
    return state


def _block(backends: list[str], i: int, p: int) -> list[str]:
    """Dispatcher i's own servers under the hierarchical topology: the i-th of p blocks."""
    n = len(backends)
    block = backends[i * n // p : (i + 1) * n // p]
    if not block:
        raise InputError(f"{p} hierarchical dispatchers cannot each own a block of {n} servers")
    return block
