//! Load-metric exchange among proxies in front of the same backends, as the ReDAL
//! paper's dispatchers do (§II-D): every `interval` each proxy sends its own
//! `policy::Metrics` to every peer over UDP; a receiver holds a message `delay` seconds,
//! then gives the policy the sum of the latest message of each peer (`Dispatch::sync`).
//!
//! Wire format (version 1): byte 1, the sender id (u64 little endian), then signed
//! LEB128 (zigzag) integers: slice, len(active), active…, len(actual), actual…,
//! rows of expected, and per row its length and values.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use policy::Metrics;
use tokio::net::UdpSocket;

use crate::dispatcher::Dispatcher;

const VERSION: u8 = 1;

fn put(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        let b = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn get(buf: &mut &[u8]) -> Option<i64> {
    let mut z = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = buf.split_first()?;
        *buf = rest;
        z |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some((z >> 1) as i64 ^ -((z & 1) as i64));
        }
    }
    None
}

fn put_vec(out: &mut Vec<u8>, v: &[i64]) {
    put(out, v.len() as i64);
    v.iter().for_each(|x| put(out, *x));
}

/// Lengths are bounded by the datagram, so a corrupt length cannot allocate much.
fn get_vec(buf: &mut &[u8]) -> Option<Vec<i64>> {
    let n = usize::try_from(get(buf)?)
        .ok()
        .filter(|n| *n <= buf.len())?;
    (0..n).map(|_| get(buf)).collect()
}

pub fn encode(sender: u64, m: &Metrics) -> Vec<u8> {
    let mut out = vec![VERSION];
    out.extend_from_slice(&sender.to_le_bytes());
    put(&mut out, m.slice);
    put_vec(&mut out, &m.active);
    put_vec(&mut out, &m.actual);
    put(&mut out, m.expected.len() as i64);
    m.expected.iter().for_each(|row| put_vec(&mut out, row));
    out
}

pub fn decode(mut buf: &[u8]) -> Option<(u64, Metrics)> {
    let (&v, rest) = buf.split_first()?;
    if v != VERSION || rest.len() < 8 {
        return None;
    }
    let sender = u64::from_le_bytes(rest[..8].try_into().ok()?);
    buf = &rest[8..];
    let slice = get(&mut buf)?;
    let active = get_vec(&mut buf)?;
    let actual = get_vec(&mut buf)?;
    let rows = usize::try_from(get(&mut buf)?)
        .ok()
        .filter(|n| *n <= buf.len())?;
    let expected = (0..rows)
        .map(|_| get_vec(&mut buf))
        .collect::<Option<_>>()?;
    buf.is_empty().then_some((
        sender,
        Metrics {
            active,
            slice,
            actual,
            expected,
        },
    ))
}

/// `m` as of the later absolute slice `slice`: expected rows before it are dropped and
/// the actual load (of an earlier slice) no longer counts — what `Metrics::actual_at`
/// and `expected_at` would read. Peers' messages are aligned so they add up.
pub fn align(m: &Metrics, slice: i64) -> Metrics {
    if m.slice >= slice || (m.actual.is_empty() && m.expected.is_empty()) {
        return m.clone();
    }
    let skip = usize::try_from(slice - m.slice).unwrap_or(usize::MAX);
    Metrics {
        active: m.active.clone(),
        slice,
        actual: vec![0; m.actual.len()],
        expected: m.expected.iter().skip(skip).cloned().collect(),
    }
}

/// The sum of the peers' latest messages, aligned to the latest slice among them.
pub fn sum(latest: &HashMap<u64, Metrics>) -> Metrics {
    let slice = latest.values().map(|m| m.slice).max().unwrap_or(0);
    let mut total = Metrics::default();
    for m in latest.values() {
        total.add(&align(m, slice));
    }
    total
}

pub async fn run(
    socket: UdpSocket,
    me: u64,
    peers: Vec<SocketAddr>,
    interval: f64,
    delay: f64,
    d: Arc<Dispatcher>,
) {
    let socket = Arc::new(socket);
    let recv = tokio::spawn(receive(Arc::clone(&socket), delay, Arc::clone(&d)));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(interval));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let (m, model_bytes) = d.metrics();
        let msg = encode(me, &m);
        d.stats.sync_messages.inc();
        d.stats.sync_model_bytes.inc_by(model_bytes as u64);
        for p in &peers {
            // A datagram the OS refuses (peer not up yet) is not a sent message.
            if socket.send_to(&msg, p).await.is_ok() {
                d.stats.sync_datagrams.inc();
                d.stats.sync_wire_bytes.inc_by(msg.len() as u64);
            }
        }
        if recv.is_finished() {
            return;
        }
    }
}

async fn receive(socket: Arc<UdpSocket>, delay: f64, d: Arc<Dispatcher>) {
    let latest: Arc<Mutex<HashMap<u64, Metrics>>> = Arc::default();
    let mut buf = vec![0u8; 65536];
    loop {
        let Ok((n, _)) = socket.recv_from(&mut buf).await else {
            continue;
        };
        let Some((sender, m)) = decode(&buf[..n]) else {
            d.stats.sync_bad.inc();
            continue;
        };
        d.stats.sync_received.inc();
        let apply = {
            let (d, latest) = (Arc::clone(&d), Arc::clone(&latest));
            move || {
                let total = {
                    let mut l = latest.lock().unwrap_or_else(|e| e.into_inner());
                    l.insert(sender, m);
                    sum(&l)
                };
                d.sync(&total);
            }
        };
        if delay > 0.0 {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs_f64(delay)).await;
                apply();
            });
        } else {
            apply();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_garbage_is_refused() {
        let m = Metrics {
            active: vec![0, 3, -1, 1 << 40],
            slice: 123_456,
            actual: vec![2, 0, 5, 1],
            expected: vec![vec![1, 2, 3, 4], vec![], vec![0, 0, 0, 9]],
        };
        let wire = encode(77, &m);
        assert_eq!(decode(&wire), Some((77, m)));
        assert_eq!(decode(&wire[..wire.len() - 1]), None);
        assert_eq!(decode(b"GET / HTTP/1.1\r\n"), None);
        assert_eq!(decode(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7e]), None); // huge length
    }

    /// ReDAL over 4 servers, h = 10 s, d = 1 s: the paper counts 4 · (2 + 10) = 48
    /// bytes; on the wire (sender id, lengths, varints of small counts) it is 77.
    #[test]
    fn redal_message_size_on_the_wire_beside_the_papers_count() {
        let m = Metrics {
            active: vec![3; 4],
            slice: 1000,
            actual: vec![1; 4],
            expected: vec![vec![2; 4]; 11],
        };
        assert_eq!(policy::sync_message_bytes(4, 10.0, 1.0), 48);
        assert_eq!(encode(1, &m).len(), 77);
    }

    #[test]
    fn late_messages_are_aligned_before_adding() {
        let early = Metrics {
            active: vec![1, 0],
            slice: 5,
            actual: vec![4, 4],
            expected: vec![vec![1, 0], vec![0, 2]],
        };
        let now = Metrics {
            active: vec![0, 1],
            slice: 6,
            actual: vec![1, 0],
            expected: vec![vec![3, 3]],
        };
        let total = sum(&HashMap::from([(1, early), (2, now)]));
        assert_eq!(total.slice, 6);
        assert_eq!(total.active, [1, 1]);
        assert_eq!(total.actual, [1, 0]); // slice 5's actual load is over
        assert_eq!(total.expected, [vec![3, 5]]); // slice 6's reservations of both
    }
}
