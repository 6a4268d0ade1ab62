"""free_ports: distinct, bindable, and never an ephemeral port (one an outgoing
connection could take before the server binds it)."""

from __future__ import annotations

import socket

from tierlab.live.lifecycle import LOWEST_PORT, _ephemeral_low, free_ports


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range():
    ports = free_ports(20)
    assert len(set(ports)) == 20
    assert all(LOWEST_PORT <= p < _ephemeral_low() for p in ports)
    socks = [socket.socket() for _ in ports]
    try:
        for s, p in zip(socks, ports):
            s.bind(("127.0.0.1", p))
    finally:
        for s in socks:
            s.close()
