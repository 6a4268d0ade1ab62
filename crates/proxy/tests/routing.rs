//! Placement: round robin spreads evenly, cookie affinity sticks, a refused backend is
//! skipped and its request re-dispatched, a lost backend gives a counted 502; the
//! proxy's /metrics and summary agree with what the test sent.

mod common;

use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_spreads_evenly_and_metrics_agree() {
    let bs = [backend(0).await, backend(1).await, backend(2).await];
    let addrs: Vec<_> = bs.iter().map(|b| b.addr).collect();
    let p = start(&addrs, json!({"policy": "round_robin"}), json!({})).await;
    let mut c = Client::connect(p.addr).await;
    let mut counts = [0; 3];
    for _ in 0..30 {
        let r = c.get("/x", &[]).await;
        assert_eq!(r.status, 200);
        counts[r.backend().unwrap()] += 1;
    }
    assert_eq!(counts, [10, 10, 10]);
    // Keep-alive on both sides: one upstream connection per backend did it all.
    for b in &bs {
        assert_eq!(
            b.seen.connections.load(std::sync::atomic::Ordering::SeqCst),
            1
        );
    }
    eventually("every response relayed", || {
        p.summary()["proxy"]["backends"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["served"] == 10 && b["active"] == 0)
    })
    .await;
    let m = p.metrics_text();
    assert_eq!(sample(&m, "tierlab_proxy_requests_total"), 30.0);
    for a in &addrs {
        let l = format!("{{backend=\"{a}\"}}");
        assert_eq!(
            sample(&m, &format!("tierlab_proxy_backend_served_total{l}")),
            10.0
        );
        assert_eq!(sample(&m, &format!("tierlab_proxy_backend_active{l}")), 0.0);
        assert_eq!(
            sample(&m, &format!("tierlab_proxy_backend_errors_total{l}")),
            0.0
        );
        assert_eq!(sample(&m, &format!("tierlab_proxy_backend_up{l}")), 1.0);
    }
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserted_cookie_keeps_a_session_on_its_backend() {
    let bs = [backend(0).await, backend(1).await, backend(2).await];
    let addrs: Vec<_> = bs.iter().map(|b| b.addr).collect();
    // No session header: the cookie alone names the session.
    let p = start(
        &addrs,
        json!({"policy": "affinity"}),
        json!({"session": {"mode": "insert", "cookie": "SRV", "header": null}}),
    )
    .await;
    let first = get(p.addr, "/", &[]).await;
    let set = first.headers["set-cookie"].to_str().unwrap().to_string();
    let cookie = set.split(';').next().unwrap().to_string();
    assert!(cookie.starts_with("SRV="), "{set}");
    let home = first.backend().unwrap();
    for _ in 0..10 {
        // Fresh connections: affinity comes from the cookie, not the connection.
        let r = get(p.addr, "/", &[("cookie", &cookie)]).await;
        assert_eq!(r.backend(), Some(home));
        assert!(
            r.headers.get("set-cookie").is_none(),
            "cookie already right"
        );
    }
    // Another session starts on the next server (round robin for new sessions).
    let other = get(p.addr, "/", &[]).await;
    assert_eq!(other.backend(), Some((home + 1) % 3));
    let s = p.summary();
    assert_eq!(s["dispatch"]["sessions_created"], 2);
    assert_eq!(s["dispatch"]["session_migrations"], 0);
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_header_follows_the_load_generator_and_counts_migrations() {
    let bs = [backend(0).await, backend(1).await];
    let addrs: Vec<_> = bs.iter().map(|b| b.addr).collect();
    // Round robin ignores affinity: every other request of a session migrates.
    let p = start(&addrs, json!({"policy": "round_robin"}), json!({})).await;
    let mut c = Client::connect(p.addr).await;
    for _ in 0..4 {
        assert_eq!(c.get("/", &[("x-tierlab-session", "7")]).await.status, 200);
    }
    let s = p.summary();
    assert_eq!(s["dispatch"]["sessions_created"], 1);
    assert_eq!(s["dispatch"]["session_migrations"], 3);
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_backend_is_skipped_and_its_request_redispatched() {
    let dead = refused_addr().await;
    let live = [backend(1).await, backend(2).await];
    let addrs = [dead, live[0].addr, live[1].addr];
    let p = start(
        &addrs,
        json!({"policy": "round_robin"}),
        json!({"health": {"retry": 600}}),
    )
    .await;
    let mut c = Client::connect(p.addr).await;
    let mut served = [0; 3];
    for _ in 0..12 {
        let r = c.get("/", &[]).await;
        assert_eq!(r.status, 200, "{}", r.body);
        served[r.backend().unwrap()] += 1;
    }
    assert_eq!(served[0], 0);
    let s = p.summary();
    // Refused once, then marked down (retried only after 600 s): one re-dispatch,
    // and no migration — the refused request's session never lived on the dead one.
    assert_eq!(s["proxy"]["redispatches"], 1);
    assert_eq!(s["dispatch"]["sessions_created"], 12);
    assert_eq!(s["dispatch"]["session_migrations"], 0);
    assert_eq!(s["proxy"]["bad_gateway"], 0);
    assert_eq!(s["proxy"]["backends"][0]["errors"], 1);
    let m = p.metrics_text();
    assert_eq!(
        sample(
            &m,
            &format!("tierlab_proxy_backend_up{{backend=\"{dead}\"}}")
        ),
        0.0
    );
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_backend_refusing_gives_503_not_a_hang() {
    let addrs = [refused_addr().await, refused_addr().await];
    let p = start(&addrs, json!({"policy": "least_active"}), json!({})).await;
    let r = get(p.addr, "/", &[]).await;
    assert_eq!(r.status, 503);
    assert!(r.headers.contains_key("retry-after"));
    let s = p.summary();
    assert_eq!(s["proxy"]["redispatches"], 2);
    assert_eq!(s["proxy"]["rejected_no_backend"], 1);
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_closing_mid_response_gives_a_counted_502() {
    let lost = backend_raw(b"HTTP/1.1 200 OK\r\nContent-Le").await;
    let p = start(&[lost.addr], json!({"policy": "round_robin"}), json!({})).await;
    let r = get(p.addr, "/", &[]).await;
    assert_eq!(r.status, 502);
    // A truncated body after a complete head: the client sees the cut, it is counted.
    let cut = backend_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this").await;
    let p2 = start(&[cut.addr], json!({"policy": "round_robin"}), json!({})).await;
    let out = raw(p2.addr, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").await;
    // The proxy closes the connection short of the declared length (hyper drops the
    // head too when the body fails before its first flush): the client can tell.
    if let Some((head, body)) = out.split_once("\r\n\r\n") {
        assert!(head.contains("content-length: 100"), "{head}");
        assert!(body.len() < 100, "{body}");
    } else {
        assert!(out.is_empty(), "{out}");
    }
    eventually("the truncated response counted", || {
        p2.summary()["proxy"]["backends"][0]["errors"] == 1
    })
    .await;
    let s = p.summary();
    assert_eq!(s["proxy"]["bad_gateway"], 1);
    assert_eq!(s["proxy"]["backends"][0]["errors"], 1);
    assert_eq!(s["proxy"]["backends"][0]["active"], 0);
    // Both proxies still serve (and still answer 502 honestly).
    assert_eq!(get(p.addr, "/", &[]).await.status, 502);
    p.shutdown().unwrap();
    p2.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_stream_both_ways_and_hop_by_hop_headers_stay_behind() {
    let b = backend(0).await;
    let p = start(&[b.addr], json!({"policy": "round_robin"}), json!({})).await;
    let mut c = Client::connect(p.addr).await;
    let body = bytes::Bytes::from(vec![b'x'; 300_000]);
    let r = c
        .send(
            "POST",
            "/upload",
            &[("connection", "x-hop"), ("x-hop", "1")],
            body,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, "backend 0 got 300000 bytes");
    // Chunked request body through the proxy, raw.
    let out = raw(
        p.addr,
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    )
    .await;
    assert!(out.contains("backend 0 got 5 bytes"), "{out}");
    // Absolute form (as sent to a forward proxy) is rewritten to origin form.
    let out = raw(
        p.addr,
        b"GET http://t/abs?q=1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    p.shutdown().unwrap();
}

/// The real ReDAL-W policy on the wall clock, with sessions and types: it places and
/// keeps sessions (no migration while every server is lightly loaded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redal_w_keeps_sessions_on_the_wall_clock() {
    let bs = [backend(0).await, backend(1).await];
    let addrs = [bs[0].addr, bs[1].addr];
    let redal = json!({"policy": "redal", "alpha": 0.9, "slice": 0.05, "think_time": 0.2,
                       "window": 10, "intervals": 3, "interval": 0.05, "wait": true});
    let p = start(&addrs, redal, json!({"types": {"names": ["a", "b"]}})).await;
    let mut c = Client::connect(p.addr).await;
    let mut homes = std::collections::HashMap::new();
    for i in 0..60 {
        let session = (i % 6).to_string();
        let ty = if i % 2 == 0 { "a" } else { "b" };
        let r = c
            .get(
                "/",
                &[("x-tierlab-session", &session), ("x-tierlab-type", ty)],
            )
            .await;
        assert_eq!(r.status, 200);
        let home = *homes.entry(session).or_insert(r.backend().unwrap());
        assert_eq!(r.backend(), Some(home));
    }
    let s = p.summary();
    assert_eq!(s["dispatch"]["sessions_created"], 6);
    assert_eq!(s["dispatch"]["session_migrations"], 0);
    assert_eq!(s["dispatch"]["rejected_queue_full"], 0);
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cookies_anonymous_requests_get_no_cookie() {
    let b = backend(0).await;
    let p = start(
        &[b.addr],
        json!({"policy": "round_robin"}),
        json!({"session": {"mode": "none"}}),
    )
    .await;
    let r = get(p.addr, "/", &[]).await;
    assert_eq!(r.status, 200);
    assert!(r.headers.get("set-cookie").is_none());
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_that_does_not_answer_in_time_gives_a_counted_504() {
    let b = backend_gated(0).await;
    let p = start(
        &[b.addr],
        json!({"policy": "round_robin"}),
        json!({"limits": {"backend_timeout": 0.3}}),
    )
    .await;
    assert_eq!(get(p.addr, "/", &[]).await.status, 504);
    let s = p.summary();
    assert_eq!(s["proxy"]["gateway_timeout"], 1);
    assert_eq!(s["proxy"]["backends"][0]["errors"], 1);
    assert_eq!(s["proxy"]["backends"][0]["active"], 0);
    p.shutdown().unwrap();
}
