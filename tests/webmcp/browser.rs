//! A real Chromium (156, `--enable-features=WebMCP`, headless) drives the
//! example app and the test app through Playwright's `page.webmcp` (Python,
//! `tests/webmcp/browser.py`), and `@mcp-b/webmcp-polyfill` in a Chromium
//! without the flag.
//!
//! Needs: Python with `playwright` (`$TOOLMARK_PYTHON`, else `.ci/venv/bin/python`),
//! Chromium (`$TOOLMARK_CHROMIUM`, else `/usr/bin/chromium`), and for the
//! polyfill test the package under `.ci/node` (or `$TOOLMARK_WEBMCP_POLYFILL`),
//! all installed by `.ci/run`. Without Python and Chromium libtest reports these
//! tests `ignored` (never `ok`); under `CI` they run, and a missing client fails.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use serde_json::Value;
use toolmark::event::Event;
use toolmark::Caller;

use crate::app::{polyfill_path, test_app, with_tee, Tee, CANARY_CVC, CANARY_NUMBER};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Python with Playwright, and Chromium. A test that calls this carries the
/// `toolmark_client` attribute below: without its clients libtest reports it
/// `ignored`, never `ok` (`tests/support/external.rs`).
fn tools() -> Option<(PathBuf, PathBuf)> {
    let python = crate::external::python();
    let has_playwright = Command::new(&python)
        .args(["-c", "import playwright.async_api"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_playwright,
        "no Playwright in the Python at {}: run .ci/run (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 pip install playwright)",
        python.display()
    );
    Some((python, crate::external::chromium()))
}

/// An app served on a loopback port for as long as this lives.
struct Served {
    rt: tokio::runtime::Runtime,
    addr: SocketAddr,
}

fn serve(make: impl FnOnce() -> Router + Send) -> Served {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let router = rt.block_on(async { make() });
    rt.spawn(async move { axum::serve(listener, router).await });
    Served { rt, addr }
}

impl Served {
    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.addr.port())
    }

    /// A TCP proxy in front of the app, which the test can cut: every open
    /// connection closes, and new ones are closed at once until it resumes.
    /// Its control endpoints (`/proxy/cut`, `/proxy/resume`) are served at the
    /// address returned second; the app itself, directly, at the third.
    fn behind_proxy(self) -> (Served, String, String) {
        let direct = self.base();
        let upstream = self.addr;
        let control = Arc::new(ProxyControl::default());
        let listener = self
            .rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let c = Arc::clone(&control);
        self.rt.spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                if c.held.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let cut = c.cut.lock().unwrap().clone();
                tokio::spawn(async move {
                    let Ok(mut out) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut out) => {}
                        () = cut.cancelled() => {}
                    }
                });
            }
        });
        // The control routes, on a server of their own.
        let c = Arc::clone(&control);
        let control_listener = self
            .rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let control_addr = control_listener.local_addr().unwrap();
        let router = self.rt.block_on(async move {
            let (cut, resume) = (Arc::clone(&c), c);
            Router::new()
                .route(
                    "/proxy/cut",
                    axum::routing::post(move || {
                        cut.held.store(true, Ordering::SeqCst);
                        let old = std::mem::take(&mut *cut.cut.lock().unwrap());
                        old.cancel();
                        async { "cut" }
                    }),
                )
                .route(
                    "/proxy/resume",
                    axum::routing::post(move || {
                        resume.held.store(false, Ordering::SeqCst);
                        async { "resumed" }
                    }),
                )
        });
        self.rt
            .spawn(async move { axum::serve(control_listener, router).await });
        (
            Served { rt: self.rt, addr },
            format!("http://127.0.0.1:{}", control_addr.port()),
            direct,
        )
    }
}

#[derive(Default)]
struct ProxyControl {
    held: std::sync::atomic::AtomicBool,
    cut: std::sync::Mutex<tokio_util::sync::CancellationToken>,
}

/// Run one scenario of `browser.py`; its `RESULT` JSON.
fn run(scenario: &str, base: &str, extra: &[&str]) -> Option<Value> {
    let (python, chromium) = tools()?;
    let out = Command::new(python)
        .arg(root().join("tests/webmcp/browser.py"))
        .arg(scenario)
        .arg(base)
        .arg(chromium)
        .args(extra)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "browser scenario {scenario} failed:\n{stdout}\n{stderr}"
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap();
    Some(serde_json::from_str(line).unwrap())
}

/// No planted secret in anything the app sent.
fn assert_no_secret(tee: &Tee) {
    let bytes = tee.bytes.lock().unwrap();
    let all = String::from_utf8_lossy(&bytes);
    assert!(!all.is_empty());
    for secret in [CANARY_NUMBER, CANARY_CVC] {
        assert!(!all.contains(secret), "a response held {secret}");
    }
}

#[test]
#[cfg_attr(
    not(all(toolmark_client = "python", toolmark_client = "chromium")),
    ignore = "needs Chromium and Python with Playwright: set TOOLMARK_CHROMIUM and TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn the_example_in_chromium_lists_calls_confirms_in_its_dialog_and_follows_its_scope() {
    let tee = Arc::new(Tee::default());
    let state = std::sync::Mutex::new(None);
    let served = serve(|| {
        let (router, tm, todos) = crate::example::app();
        *state.lock().unwrap() = Some((tm, todos));
        with_tee(router, Arc::clone(&tee))
    });
    let Some(_) = run("example", &served.base(), &[]) else {
        return;
    };
    let (_tm, todos) = state.lock().unwrap().take().unwrap();
    // The approved upgrade ran with the real number (the output's last four
    // digits come from it), the approved clear ran once.
    assert_eq!(todos.plan().as_deref(), Some("yearly"));
    assert!(todos.items().is_empty());
    assert_no_secret(&tee);
    drop(served.rt);
}

#[test]
#[cfg_attr(
    not(all(toolmark_client = "python", toolmark_client = "chromium")),
    ignore = "needs Chromium and Python with Playwright: set TOOLMARK_CHROMIUM and TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn consequential_calls_wait_for_on_confirm_and_re_sync_never_duplicates() {
    // One page session at a time, dropped as soon as it is idle and another
    // comes: the scenario makes its page lose its session while cut off.
    let app = test_app(|b| b, |w| w.max_pages(1).page_idle(Duration::ZERO));
    let tee = Arc::clone(&app.tee);
    let (served, control, direct) = serve(|| app.router()).behind_proxy();
    let Some(_) = run("confirm", &served.base(), &[&control, &direct]) else {
        return;
    };
    assert_eq!(app.runs.load(Ordering::SeqCst), 1, "approved: ran once");
    let seen = app.seen.lock().unwrap()[0].clone();
    assert_eq!(
        seen["card"]["number"], CANARY_NUMBER,
        "the tool got the real value"
    );
    assert_eq!(seen["card"]["cvc"], CANARY_CVC);
    // The page's agent aborted: execute's signal cancelled the run; the call
    // aborted while its dialog was open never ran.
    assert!(
        app.cancelled.load(Ordering::SeqCst),
        "slow.wait was cancelled"
    );
    assert_eq!(app.runs.load(Ordering::SeqCst), 1);
    // The page's stream was replaced twice (its dialog went and came back) and
    // was cut once: at least four streams, each re-synced.
    let streams = tee
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.path == "/toolmark/stream")
        .count();
    eprintln!("{streams} stream requests");
    assert!(streams >= 4, "{streams} stream requests");
    // The reconnect found the session gone (401) and opened a new one.
    let requests = tee.requests.lock().unwrap();
    assert!(requests
        .iter()
        .any(|r| r.path == "/toolmark/stream" && r.status == 401));
    let pages = requests
        .iter()
        .filter(|r| r.path == "/toolmark/page" && r.status == 201)
        .count();
    assert_eq!(pages, 3, "the page's first, the other's, the page's second");
    assert_no_secret(&tee);
}

#[test]
#[cfg_attr(
    not(all(toolmark_client = "python", toolmark_client = "chromium")),
    ignore = "needs Chromium and Python with Playwright: set TOOLMARK_CHROMIUM and TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn on_confirm_runs_inside_request_user_interaction_where_offered() {
    let app = test_app(|b| b, |w| w);
    let served = serve(|| app.router());
    let Some(_) = run("interaction", &served.base(), &[]) else {
        return;
    };
    assert_eq!(app.runs.load(Ordering::SeqCst), 0, "rejected: nothing ran");
}

#[test]
#[cfg_attr(
    not(all(toolmark_client = "python", toolmark_client = "chromium")),
    ignore = "needs Chromium and Python with Playwright: set TOOLMARK_CHROMIUM and TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn a_page_without_on_confirm_does_not_list_consequential_tools() {
    let app = test_app(|b| b.dev_events(true), |w| w);
    let mut events = app.tm.events();
    let served = serve(|| app.router());
    let Some(_) = run("plain", &served.base(), &[]) else {
        return;
    };
    let mut said = false;
    while let Ok(e) = events.try_recv() {
        if let Event::MissingConfirmHandler { tool, callers } = e {
            said |= tool == "pay.send" && callers == vec![Caller::WebMcp];
        }
    }
    assert!(said, "the development event named pay.send");
}

#[test]
#[cfg_attr(
    not(all(toolmark_client = "python", toolmark_client = "chromium")),
    ignore = "needs Chromium and Python with Playwright: set TOOLMARK_CHROMIUM and TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn tools_the_browser_refuses_are_reported() {
    let app = test_app(|b| b, |w| w);
    let served = serve(|| app.router());
    if let Some(result) = run("dup", &served.base(), &[]) {
        eprintln!("refused: {}", result["refused"]);
    }
}

#[test]
#[cfg_attr(
    not(all(toolmark_client = "python", toolmark_client = "chromium")),
    ignore = "needs Chromium and Python with Playwright: set TOOLMARK_CHROMIUM and TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn another_origin_in_the_browser_is_refused_and_runs_nothing() {
    let app = test_app(|b| b, |w| w);
    let tee = Arc::clone(&app.tee);
    let served = serve(|| app.router());
    // The same server under another name is another origin.
    let evil = format!("http://localhost:{}", served.addr.port());
    let Some(result) = run("attacker", &served.base(), &[&evil]) else {
        return;
    };
    eprintln!("what the attacker's page saw: {result}");
    assert_eq!(app.runs.load(Ordering::SeqCst), 0);
    let requests = tee.requests.lock().unwrap();
    let from_evil: Vec<_> = requests
        .iter()
        .filter(|r| r.path.starts_with("/toolmark/") && r.origin.as_deref() == Some(evil.as_str()))
        .collect();
    assert!(!from_evil.is_empty(), "{result}");
    for r in &from_evil {
        eprintln!(
            "from the other origin: {} {} → {}",
            r.method, r.path, r.status
        );
        assert!(r.status >= 400, "{r:?} was answered");
    }
}

#[test]
#[cfg_attr(
    not(all(toolmark_client = "python", toolmark_client = "chromium")),
    ignore = "needs Chromium and Python with Playwright: set TOOLMARK_CHROMIUM and TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn the_polyfill_in_a_chromium_without_webmcp_works_too() {
    assert!(
        polyfill_path().is_some(),
        "no @mcp-b/webmcp-polyfill under .ci/node ($TOOLMARK_WEBMCP_POLYFILL): run .ci/run"
    );
    let app = test_app(|b| b, |w| w);
    let tee = Arc::clone(&app.tee);
    let served = serve(|| app.router());
    let Some(_) = run("polyfill", &served.base(), &[]) else {
        return;
    };
    assert_eq!(app.runs.load(Ordering::SeqCst), 1);
    assert_no_secret(&tee);
}

#[test]
#[cfg_attr(
    not(all(toolmark_client = "python", toolmark_client = "chromium")),
    ignore = "needs Chromium and Python with Playwright: set TOOLMARK_CHROMIUM and TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn navigator_model_context_is_used_where_document_has_none() {
    assert!(
        polyfill_path().is_some(),
        "no @mcp-b/webmcp-polyfill under .ci/node ($TOOLMARK_WEBMCP_POLYFILL): run .ci/run"
    );
    let app = test_app(|b| b, |w| w);
    let served = serve(|| app.router());
    run("navigator", &served.base(), &[]);
}

#[test]
#[cfg_attr(
    not(all(toolmark_client = "python", toolmark_client = "chromium")),
    ignore = "needs Chromium and Python with Playwright: set TOOLMARK_CHROMIUM and TOOLMARK_PYTHON, or run .ci/run (runs every test)"
)]
fn a_browser_without_webmcp_gets_a_clear_console_message() {
    let app = test_app(|b| b, |w| w);
    let served = serve(|| app.router());
    run("unsupported", &served.base(), &[]);
}

/// Without Chromium and Playwright these tests are reported ignored, never `ok`.
#[test]
fn the_browser_tests_are_reported_ignored_unless_chromium_is_expected() {
    crate::external::assert_ignored_unless_expected(
        cfg!(all(toolmark_client = "python", toolmark_client = "chromium")),
        &[
            "browser::the_example_in_chromium_lists_calls_confirms_in_its_dialog_and_follows_its_scope",
            "browser::consequential_calls_wait_for_on_confirm_and_re_sync_never_duplicates",
            "browser::on_confirm_runs_inside_request_user_interaction_where_offered",
            "browser::a_page_without_on_confirm_does_not_list_consequential_tools",
            "browser::tools_the_browser_refuses_are_reported",
            "browser::another_origin_in_the_browser_is_refused_and_runs_nothing",
            "browser::the_polyfill_in_a_chromium_without_webmcp_works_too",
            "browser::navigator_model_context_is_used_where_document_has_none",
            "browser::a_browser_without_webmcp_gets_a_clear_console_message",
        ],
    );
}
