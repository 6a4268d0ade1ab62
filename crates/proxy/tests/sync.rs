//! Two proxies in front of the same backends share load metrics over UDP: one sees
//! the other's requests in progress and places around them; messages and bytes are
//! counted as the simulator counts them.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use common::*;
use serde_json::json;

fn free_udp() -> SocketAddr {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_places_around_the_other_proxys_load() {
    let held = backend_gated(0).await;
    let free = backend(1).await;
    let addrs = [held.addr, free.addr];
    let (ua, ub) = (free_udp(), free_udp());
    let sync = |me: SocketAddr, peer: SocketAddr| json!({"sync": {"listen": me, "peers": [peer], "interval": 0.02, "origin_unix": 1.0e9}});
    let a = start(&addrs, json!({"policy": "least_active"}), sync(ua, ub)).await;
    let b = start(&addrs, json!({"policy": "least_active"}), sync(ub, ua)).await;
    let addr = a.addr;
    let pending = tokio::spawn(async move { get(addr, "/", &[]).await });
    eventually("A's request at backend 0", || {
        held.seen.requests.load(Ordering::SeqCst) == 1
    })
    .await;
    let seen = b.summary()["proxy"]["sync_received"].as_u64().unwrap();
    eventually("B heard from A since", || {
        b.summary()["proxy"]["sync_received"].as_u64().unwrap() >= seen + 2
    })
    .await;
    // Alone, B would start at backend 0 (all idle, ties from 0); it knows better.
    assert_eq!(get(b.addr, "/", &[]).await.backend(), Some(1));
    held.gate.add_permits(1);
    assert_eq!(pending.await.unwrap().status, 200);
    for p in [&a, &b] {
        let s = p.summary();
        assert!(s["dispatch"]["sync_messages"].as_u64().unwrap() >= 2);
        // One active count per server, as the paper counts bytes.
        assert_eq!(s["dispatch"]["sync_payload_bytes"], 2.0);
        assert!(s["proxy"]["sync_wire_bytes_per_datagram"].as_f64().unwrap() > 9.0);
        assert_eq!(s["proxy"]["sync_bad"], 0);
    }
    a.shutdown().unwrap();
    b.shutdown().unwrap();
}
