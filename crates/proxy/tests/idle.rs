//! The binary end to end: started from a configuration file, it holds 10,000 idle
//! client connections while serving normal traffic, and on SIGTERM writes its summary
//! and exits 0. The proxy runs as its own process so that the two sides' descriptors
//! (10,000 each) count against two limits.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::json;
use tokio::net::TcpStream;

const IDLE: usize = 10_000;

/// The proxy process, killed if the test fails before it stops it.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Raise this process's descriptor limit (the child inherits it): to `want`, raising
/// the hard limit too where allowed (root, as in CI), else to the hard limit.
fn raise_nofile(want: u64) -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on local structs.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        let wanted = libc::rlimit {
            rlim_cur: want.max(r.rlim_cur),
            rlim_max: want.max(r.rlim_max),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) == 0 {
            return wanted.rlim_cur;
        }
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
    }
    r.rlim_cur
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holds_ten_thousand_idle_connections_while_serving() {
    let limit = raise_nofile(IDLE as u64 + 1_000);
    assert!(
        limit >= IDLE as u64 + 500,
        "RLIMIT_NOFILE hard limit {limit} is below {}; raise it (ulimit -Hn) to run this test",
        IDLE + 500
    );
    let b = backend(0).await;
    let dir = std::env::temp_dir().join(format!("tierlab-proxy-idle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (conf, summary) = (dir.join("proxy.json"), dir.join("summary.json"));
    let c = json!({
        "listen": "127.0.0.1:0",
        "backends": [b.addr],
        "policy": {"policy": "round_robin"},
        "limits": {"header_timeout": 300},
        "summary": summary,
    });
    std::fs::write(&conf, c.to_string()).unwrap();
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_tierlab-proxy"))
            .arg(&conf)
            .args(["--threads", "2"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr: std::net::SocketAddr = line
        .split_whitespace()
        .nth(3)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));

    let mut idle = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    let mut client = Client::connect(addr).await;
    for _ in 0..200 {
        assert_eq!(client.get("/", &[]).await.status, 200);
    }
    // Every idle connection is still open: nothing to read, no EOF.
    let mut open = 0;
    for s in &idle {
        let mut buf = [0u8; 1];
        match s.try_read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => open += 1,
            _ => {}
        }
    }
    assert_eq!(open, IDLE);
    drop(idle);

    // SAFETY: signalling the child this test started, by its id.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
    let mut status = None;
    for _ in 0..2000 {
        if let Some(s) = child.0.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let status = status.expect("the proxy stops on SIGTERM");
    assert!(status.success());
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["proxy"]["requests"], 200);
    assert_eq!(s["proxy"]["backends"][0]["served"], 200);
    std::fs::remove_dir_all(dir).unwrap();
}
