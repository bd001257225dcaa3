//! A bounded loopback load: N concurrent clients of the official Python SDK
//! (2025-11-25 sessions) against `examples/mcp_many` in a child process, each
//! making 5 calls; 0 errors, and once they are gone the server's live sessions
//! are back to 0; the same load again and again leaves its memory (RSS) where
//! it was (what the allocator keeps after the first rounds is reused: a session
//! that leaked would add its ~100 KB every round).
//!
//! The interpreter is the one `tests/mcp/python.rs` uses: without
//! `TOOLMARK_PYTHON` (and outside CI) the test is reported ignored; when it runs
//! without the interpreter it fails (`tests/support/external.rs`).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Concurrent clients, and calls each.
const CLIENTS: usize = 100;
const CALLS: usize = 5;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The resident set of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < limit,
            "{what} did not happen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg_attr(
    not(toolmark_client = "python"),
    ignore = "needs the Python MCP SDK: set TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
#[test]
fn concurrent_clients_all_succeed_and_leave_no_session_behind() {
    let py = crate::external::python();
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(|d| d.parent())
        .unwrap()
        .join("examples/mcp_many");
    assert!(bin.exists(), "{} is missing", bin.display());
    let mut child = Command::new(bin)
        .args([
            "--tools",
            "20",
            "--http",
            "127.0.0.1:0",
            "--max-sessions",
            "1000",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let server = Server(child);
    let url = loop {
        let line = lines
            .next()
            .expect("the server printed its address")
            .unwrap();
        if let Some(u) = line.strip_prefix("listening on ") {
            break u.trim().to_owned();
        }
    };
    let live = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (l, p) = (Arc::clone(&live), Arc::clone(&peak));
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if let Some(n) = line.strip_prefix("sessions ").and_then(|n| n.parse().ok()) {
                l.store(n, Ordering::SeqCst);
                p.fetch_max(n, Ordering::SeqCst);
            }
        }
    });
    let load = |n: usize| {
        let out = Command::new(&py)
            .arg(root().join("tests/mcp/python_load.py"))
            .arg(&url)
            .arg(n.to_string())
            .arg(CALLS.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        // The SDK closes each session with DELETE and warns unless it is 200/204.
        assert!(!stderr.contains("Session termination failed"), "{stderr}");
        stdout
    };
    // Warm up (allocator arenas, the runtime's threads), then the baseline.
    load(20);
    wait_for(
        "the warm-up sessions to end",
        Duration::from_secs(30),
        || live.load(Ordering::SeqCst) == 0,
    );
    let baseline = rss_kib(pid);
    let summary = load(CLIENTS);
    assert!(
        summary.contains(&format!(
            "sessions {CLIENTS}, calls {}, errors 0",
            CLIENTS * CALLS
        )),
        "{summary}"
    );
    let during = rss_kib(pid);
    wait_for("every session to end", Duration::from_secs(30), || {
        live.load(Ordering::SeqCst) == 0
    });
    std::thread::sleep(Duration::from_millis(200));
    let after = rss_kib(pid);
    eprintln!(
        "load: {CLIENTS} clients x {CALLS} calls, 0 errors; peak {} live sessions; RSS {baseline} KiB before, {during} KiB at the end, {after} KiB once every session ended",
        peak.load(Ordering::SeqCst)
    );
    assert!(
        peak.load(Ordering::SeqCst) > 1,
        "the clients were not concurrent"
    );
    // Freed memory may stay with the allocator, which reuses it: rounds of the
    // same load level off. What must not stay is memory per session.
    let mut rounds = vec![after];
    for _ in 0..2 {
        let summary = load(CLIENTS);
        assert!(summary.contains("errors 0"), "{summary}");
        wait_for("every session to end", Duration::from_secs(30), || {
            live.load(Ordering::SeqCst) == 0
        });
        std::thread::sleep(Duration::from_millis(200));
        rounds.push(rss_kib(pid));
    }
    eprintln!("load: RSS after each round {rounds:?} KiB");
    let last = rounds[rounds.len() - 1] - rounds[rounds.len() - 2].min(rounds[rounds.len() - 1]);
    assert!(
        last <= 4 * 1024,
        "memory grew by {last} KiB over the last round of the same load: {rounds:?}"
    );
    drop(server);
}

/// Without the Python SDK the load test is reported ignored, never `ok`.
#[test]
fn the_load_test_is_reported_ignored_unless_python_is_expected() {
    crate::external::assert_ignored_unless_expected(
        cfg!(toolmark_client = "python"),
        &["load::concurrent_clients_all_succeed_and_leave_no_session_behind"],
    );
}
