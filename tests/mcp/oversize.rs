//! An oversized body over a real loopback connection: always a readable 413,
//! with a Content-Length and chunked, 10 MB each, several times, from a client
//! that writes its whole body before it reads (as most HTTP clients do).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use toolmark::mcp::McpServer;

use crate::*;

const BODY: usize = 10 * 1024 * 1024;

/// Send `head` then the body (`chunked` or not) in 64 KiB writes, then read the
/// whole answer. A connection reset on either side is a failure.
fn send_big(addr: std::net::SocketAddr, chunked: bool) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
    let framing = if chunked {
        "transfer-encoding: chunked".to_owned()
    } else {
        format!("content-length: {BODY}")
    };
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{framing}\r\n\r\n",
        addr.port()
    );
    s.write_all(head.as_bytes()).unwrap();
    let piece = vec![b'x'; 64 * 1024];
    let mut sent = 0;
    while sent < BODY {
        let n = piece.len().min(BODY - sent);
        let r = if chunked {
            s.write_all(format!("{n:x}\r\n").as_bytes())
                .and_then(|()| s.write_all(&piece[..n]))
                .and_then(|()| s.write_all(b"\r\n"))
        } else {
            s.write_all(&piece[..n])
        };
        if let Err(e) = r {
            panic!("the server stopped reading after {sent} bytes: {e}");
        }
        sent += n;
    }
    if chunked {
        s.write_all(b"0\r\n\r\n").unwrap();
    }
    let mut answer = Vec::new();
    if let Err(e) = s.read_to_end(&mut answer) {
        panic!(
            "reading the answer failed ({e}) after {:?}",
            String::from_utf8_lossy(&answer)
        );
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10_mb_body_is_a_readable_413_every_time_both_framings() {
    let server = McpServer::new(approving_app(&Log::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move { server.serve_listener(listener).await });
    for round in 0..3 {
        for chunked in [false, true] {
            let answer = tokio::task::spawn_blocking(move || send_big(addr, chunked))
                .await
                .unwrap();
            assert!(
                answer.starts_with("HTTP/1.1 413"),
                "round {round}, chunked {chunked}: {answer:?}"
            );
            assert!(
                answer.to_ascii_lowercase().contains("connection: close"),
                "{answer}"
            );
            assert!(answer.ends_with("Request body too large"), "{answer}");
        }
    }
    // And the server still answers a normal request.
    let ok = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut buf = [0u8; 12];
        s.read_exact(&mut buf).unwrap();
        String::from_utf8_lossy(&buf).into_owned()
    })
    .await
    .unwrap();
    assert_eq!(ok, "HTTP/1.1 200");
    task.abort();
}

/// A client that waits for `100 Continue` is answered 413 before it sends
/// anything.
#[tokio::test]
async fn a_client_expecting_100_continue_gets_the_413_at_once() {
    let server = McpServer::new(approving_app(&Log::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move { server.serve_listener(listener).await });
    let answer = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             expect: 100-continue\r\ncontent-length: {BODY}\r\n\r\n"
        )
        .unwrap();
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        String::from_utf8_lossy(&answer).into_owned()
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");
    task.abort();
}
