//! Serving over a byte stream (stdio): a self-contained `tools/call` answered
//! without a trip through rmcp's serve loop.
//!
//! rmcp's stdio transport parses every line into its `JsonRpcMessage` (an
//! untagged union of unions: the line is buffered, then tried against each
//! request type in turn), its serve loop spawns the handler, and the answer
//! comes back through a channel, the loop and a second task to the writer.
//! [`McpServer::serve_io`](super::McpServer::serve_io) puts a front before
//! it: it reads each line once and answers the `tools/call` lines it can
//! answer itself; every other line goes, byte for byte, to rmcp's own service
//! for the same session (served over an in-process pipe, with [`Quiet`]), and
//! what that service writes is copied out whole lines at a time, under the
//! same writer as the front's answers.
//!
//! A line is taken when rmcp would hand it to the session as it is and its
//! answer is one message that nothing else of the call's is sent before:
//!
//! - the session is a 2026-07-28 one (opened without `initialize`: every
//!   request carries its own `_meta`), and the request's `_meta` names
//!   2026-07-28 and is complete;
//! - progress and log messages (a progress token, a log level in `_meta`)
//!   go to the client through the session's peer and rmcp's loop, as on
//!   rmcp's path; the answer is written only once everything rmcp's service
//!   wrote before the call ended is out, so they still come before it;
//! - not a task (when the server keeps tasks and the request declares the
//!   extension);
//! - the line is exactly `{"jsonrpc": "2.0", "id", "method": "tools/call",
//!   "params"}`, each key once, no byte-order mark; `params` an object whose
//!   keys appear once, read as rmcp reads them (`_meta` apart, the rest as
//!   `CallToolRequestParams`).
//!
//! The taken call goes to rmcp's own dispatch of the session
//! (`Service::handle_request`: the version and `_meta` rules, `call_tool`,
//! the result hints) with the context rmcp's loop would give it (the
//! session's peer, the `_meta`, a cancellation token), and its answer is
//! serialized as rmcp's codec writes it. So every rule of the call is the one
//! rmcp's path runs; what this decides is only whether to take a line. As in
//! rmcp's loop, a `notifications/cancelled` naming a call in flight here
//! cancels it and its answer is dropped (the notification still goes on to
//! the session), and at the end of input the calls in flight have 5 seconds
//! to answer before they are cancelled. A taken call's arguments never reach
//! rmcp's logging: the loop that logs what it receives never sees the line.

use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, GetExtensions, GetMeta, JsonObject,
    JsonRpcMessage, JsonRpcVersion2_0, NumberOrString, RequestMetaObject, ServerJsonRpcMessage,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, Service, ServiceExt};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData, RoleServer};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::handler::McpSession;
use super::{McpServer, Quiet};

/// The in-process pipes between the front and rmcp's service.
const PIPE: usize = 1 << 16;

/// The longest line the front reads whole; a longer one goes on to rmcp as it
/// streams in (rmcp bounds it: 16 MiB).
const MAX_TAKEN_LINE: usize = 1 << 20;

/// How long calls in flight may still answer once the input ended (rmcp's
/// loop: 5 seconds after the end of input).
const DRAIN: Duration = Duration::from_secs(5);

/// Serve one session over `read`/`write`; see the module docs.
pub(crate) async fn serve<R, W>(server: &McpServer, read: R, write: W) -> std::io::Result<()>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let session = Arc::new(server.session());
    let out = Out::new(write);
    let front = Arc::new(Front {
        config: Arc::clone(&server.config),
        session: Arc::clone(&session),
        peer: OnceLock::new(),
        inflight: Mutex::new(HashMap::new()),
        stop: CancellationToken::new(),
        answered: tokio::sync::Notify::new(),
        flow: Arc::default(),
        out: out.clone(),
    });
    let (mut to_rmcp, rmcp_in) = tokio::io::duplex(PIPE);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE);
    let rmcp_out = Counted {
        inner: rmcp_out,
        flow: Arc::clone(&front.flow),
    };
    // rmcp's own service for everything the front does not take.
    let transport = Quiet::new(AsyncRwTransport::new_server(rmcp_in, rmcp_out));
    let rmcp_done = CancellationToken::new();
    let serving = tokio::spawn({
        let front = Arc::clone(&front);
        let done = rmcp_done.clone().drop_guard();
        async move {
            let _done = done;
            let running = Shared(session)
                .serve(transport)
                .await
                .map_err(std::io::Error::other)?;
            let _ = front.peer.set(running.peer().clone());
            running.waiting().await.map_err(std::io::Error::other)?;
            Ok::<(), std::io::Error>(())
        }
    });
    let copying = tokio::spawn(copy_out(from_rmcp, out.clone(), Arc::clone(&front.flow)));

    let mut lines = Lines::new(read);
    loop {
        let next = tokio::select! {
            biased;
            () = rmcp_done.cancelled() => break,
            next = lines.next() => next,
        };
        let forward = match next {
            Next::Line => {
                if front.take(&lines.line) {
                    continue;
                }
                front.cancelled(&lines.line);
                &lines.line[..]
            }
            Next::Pass(ref bytes) => bytes,
            Next::End => break,
        };
        if to_rmcp.write_all(forward).await.is_err() {
            break;
        }
    }
    // The end of input: rmcp's service sees it too, answers what it has in
    // flight and ends; so do the calls in flight here.
    drop(to_rmcp);
    front.drain().await;
    let served = serving.await.map_err(std::io::Error::other)?;
    let _ = copying.await;
    out.close().await;
    served
}

/// rmcp's service for a session shared with the front.
struct Shared(Arc<McpSession>);

impl Service<RoleServer> for Shared {
    fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> impl std::future::Future<Output = Result<rmcp::model::ServerResult, ErrorData>> + Send + '_
    {
        Service::handle_request(&*self.0, request, context)
    }

    fn handle_notification(
        &self,
        notification: rmcp::model::ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), ErrorData>> + Send + '_ {
        Service::handle_notification(&*self.0, notification, context)
    }

    fn get_info(&self) -> rmcp::model::ServerConfig {
        Service::get_info(&*self.0)
    }

    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        Service::supported_protocol_versions(&*self.0)
    }
}

/// The writer both paths answer on, a whole line at a time.
struct Out<W>(Arc<tokio::sync::Mutex<Option<W>>>);

impl<W> Clone for Out<W> {
    fn clone(&self) -> Self {
        Out(Arc::clone(&self.0))
    }
}

impl<W: AsyncWrite + Unpin> Out<W> {
    fn new(write: W) -> Self {
        Out(Arc::new(tokio::sync::Mutex::new(Some(write))))
    }

    /// Write one line and flush it, as rmcp's codec sends a message; `false`
    /// once the writer failed or was closed.
    async fn line(&self, bytes: &[u8]) -> bool {
        let mut guard = self.0.lock().await;
        let Some(w) = guard.as_mut() else {
            return false;
        };
        let sent = w.write_all(bytes).await.is_ok() && w.flush().await.is_ok();
        if !sent {
            *guard = None;
        }
        sent
    }

    /// Flush and let the writer go (rmcp's `close`).
    async fn close(&self) {
        if let Some(mut w) = self.0.lock().await.take() {
            let _ = w.flush().await;
        }
    }
}

/// Copy what rmcp's service writes, whole lines at a time.
async fn copy_out<W: AsyncWrite + Unpin>(
    from: tokio::io::DuplexStream,
    out: Out<W>,
    flow: Arc<Flow>,
) {
    let mut from = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match from.read_until(b'\n', &mut line).await {
            Ok(n) if n > 0 && out.line(&line).await => flow.copied(n as u64),
            // Nothing more comes out: no answer waits for it.
            _ => return flow.copied(u64::MAX),
        }
    }
}

/// How far rmcp's service has written and how much of it is out.
#[derive(Default)]
struct Flow {
    written: AtomicU64,
    copied: AtomicU64,
    caught_up: tokio::sync::Notify,
}

impl Flow {
    fn copied(&self, n: u64) {
        let _ = self
            .copied
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                Some(c.saturating_add(n))
            });
        self.caught_up.notify_waiters();
    }

    /// Wait until everything rmcp's service has written so far is out.
    async fn catch_up(&self) {
        let target = self.written.load(Ordering::Acquire);
        loop {
            let caught_up = self.caught_up.notified();
            if self.copied.load(Ordering::Acquire) >= target {
                return;
            }
            caught_up.await;
        }
    }
}

/// rmcp's output pipe, counting what it writes.
struct Counted {
    inner: tokio::io::DuplexStream,
    flow: Arc<Flow>,
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.flow.written.fetch_add(n as u64, Ordering::AcqRel);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// What the front knows of the session.
struct Front<W> {
    config: Arc<super::Config>,
    session: Arc<McpSession>,
    /// The session's peer, once rmcp's service runs (after the request that
    /// opened it): what rmcp's loop gives a handler.
    peer: OnceLock<Peer<RoleServer>>,
    /// The calls answered here and still running, by request id (rmcp's
    /// loop keeps the same table): a cancellation removes one, and its answer
    /// is dropped.
    inflight: Mutex<HashMap<NumberOrString, CancellationToken>>,
    /// Cancels every call still running here.
    stop: CancellationToken,
    /// Told whenever a call leaves `inflight`.
    answered: tokio::sync::Notify,
    /// rmcp's output, written and copied out.
    flow: Arc<Flow>,
    out: Out<W>,
}

impl<W> fmt::Debug for Front<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Front(..)")
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> Front<W> {
    /// Answer `line` here if it is a call this path takes; `false` leaves it
    /// to rmcp's service.
    fn take(self: &Arc<Self>, line: &[u8]) -> bool {
        let Some(peer) = self.peer.get() else {
            return false;
        };
        // A session opened by `initialize` (2025-11-25 and older) is left to
        // rmcp: its calls may notify and ask the client through the loop.
        if peer.peer_info().is_some() {
            return false;
        }
        let Some((id, params)) = parse_call(line) else {
            return false;
        };
        let Some(mut request) = call_request(params) else {
            return false;
        };
        let meta = request.get_meta();
        let ClientRequest::CallToolRequest(_) = &request else {
            return false;
        };
        if !super::fastcall::self_contained(&self.config, meta) {
            return false;
        }
        // What rmcp's loop does with a request: a token per request (a child
        // of the session's), `_meta` and extensions moved into the context,
        // the handler in a task of its own.
        let request_ct = self.stop.child_token();
        let mut context = RequestContext::new(id.clone(), peer.clone());
        context.ct = request_ct.child_token();
        context.meta = std::mem::take(request.get_meta_mut());
        context.extensions = std::mem::take(request.extensions_mut());
        lock(&self.inflight).insert(id.clone(), request_ct);
        let front = Arc::clone(self);
        // Boxed: the task moves a pointer, not the handler's future.
        tokio::spawn(Box::pin(async move {
            let result = Service::handle_request(&*front.session, request, context).await;
            let message: ServerJsonRpcMessage = match result {
                Ok(result) => JsonRpcMessage::response(result, id.clone()),
                Err(error) => JsonRpcMessage::error(error, Some(id.clone())),
            };
            // Cancelled meanwhile: rmcp drops the answer.
            let Some(ct) = lock(&front.inflight).remove(&id) else {
                return;
            };
            ct.cancel();
            match serde_json::to_vec(&message) {
                Ok(mut bytes) => {
                    bytes.push(b'\n');
                    // The call's progress and log messages went out through
                    // rmcp's service before it ended: they come first.
                    front.flow.catch_up().await;
                    front.out.line(&bytes).await;
                }
                Err(error) => {
                    tracing::error!(target: "toolmark::mcp", %error, "could not write an answer");
                }
            }
            front.answered.notify_waiters();
        }));
        true
    }

    /// A `notifications/cancelled` naming a call running here cancels it (the
    /// line still goes on to the session, as rmcp's loop hands it on).
    fn cancelled(&self, line: &[u8]) {
        const METHOD: &[u8] = b"notifications/cancelled";
        if lock(&self.inflight).is_empty() || !line.windows(METHOD.len()).any(|w| w == METHOD) {
            return;
        }
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        if message.get("method").and_then(Value::as_str) != Some("notifications/cancelled") {
            return;
        }
        let Some(id) = message
            .pointer("/params/requestId")
            .and_then(|v| NumberOrString::deserialize(v).ok())
        else {
            return;
        };
        if let Some(ct) = lock(&self.inflight).remove(&id) {
            ct.cancel();
            self.answered.notify_waiters();
        }
    }

    /// At the end of input: the calls in flight answer within [`DRAIN`], then
    /// the rest is cancelled (their answers dropped).
    async fn drain(&self) {
        let _ = tokio::time::timeout(DRAIN, async {
            loop {
                let answered = self.answered.notified();
                if lock(&self.inflight).is_empty() {
                    return;
                }
                answered.await;
            }
        })
        .await;
        for (_, ct) in lock(&self.inflight).drain() {
            ct.cancel();
        }
        self.stop.cancel();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One line read by the front.
enum Next {
    /// A whole line (its `\n` included) no longer than [`MAX_TAKEN_LINE`],
    /// in [`Lines::line`].
    Line,
    /// Bytes of a longer line, to pass on as they are.
    Pass(Vec<u8>),
    /// The end of input (an unterminated last line is dropped, as rmcp does).
    End,
}

/// The front's line reader. Cancel-safe: a partial line stays in `line`.
struct Lines<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// Passing the rest of a long line on.
    passing: bool,
    /// A whole line was returned last time: clear it first.
    done: bool,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    fn new(read: R) -> Self {
        Lines {
            read: BufReader::new(read),
            line: Vec::new(),
            passing: false,
            done: false,
        }
    }

    async fn next(&mut self) -> Next {
        if self.done {
            self.line.clear();
            self.done = false;
        }
        loop {
            let (consumed, next) = {
                let available = match self.read.fill_buf().await {
                    Ok(a) if !a.is_empty() => a,
                    _ => return Next::End,
                };
                let newline = available.iter().position(|b| *b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                if self.passing {
                    self.passing = newline.is_none();
                    (take, Some(Next::Pass(available[..take].to_vec())))
                } else if self.line.len() + take > MAX_TAKEN_LINE {
                    self.passing = newline.is_none();
                    let mut bytes = std::mem::take(&mut self.line);
                    bytes.extend_from_slice(&available[..take]);
                    (take, Some(Next::Pass(bytes)))
                } else {
                    self.line.extend_from_slice(&available[..take]);
                    (take, newline.map(|_| Next::Line))
                }
            };
            self.read.consume(consumed);
            if let Some(next) = next {
                self.done = matches!(next, Next::Line);
                return next;
            }
        }
    }
}

/// The id and `params` of a line that is exactly a JSON-RPC `tools/call`
/// request (see the module docs); `None` for anything else.
fn parse_call(line: &[u8]) -> Option<(NumberOrString, JsonObject)> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.starts_with(b"\xEF\xBB\xBF") {
        return None;
    }
    let CallLine { id, params } = serde_json::from_slice(line).ok()?;
    Some((id, params.0))
}

/// rmcp's reading of a `tools/call`'s `params`: `_meta` into the request's
/// extensions, the rest as `CallToolRequestParams` (whose own `_meta` stays
/// empty).
fn call_request(mut params: JsonObject) -> Option<ClientRequest> {
    let meta = match params.remove("_meta") {
        None | Some(Value::Null) => None,
        Some(Value::Object(meta)) => Some(meta),
        Some(_) => return None,
    };
    let params = CallToolRequestParams::deserialize(Value::Object(params)).ok()?;
    let mut request = CallToolRequest::new(params);
    if let Some(meta) = meta {
        request.extensions.insert(RequestMetaObject::from(meta));
    }
    Some(ClientRequest::CallToolRequest(request))
}

/// A `tools/call` request line: these four keys, each once.
struct CallLine {
    id: NumberOrString,
    params: Unique,
}

impl<'de> Deserialize<'de> for CallLine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CallLine;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tools/call request")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallLine, A::Error> {
                let (mut version, mut id, mut method, mut params) = (false, None, false, None);
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match key.as_ref() {
                        "jsonrpc" if !version => {
                            map.next_value::<JsonRpcVersion2_0>()?;
                            version = true;
                        }
                        "id" if id.is_none() => id = Some(map.next_value::<NumberOrString>()?),
                        "method" if !method => {
                            let m = map.next_value::<std::borrow::Cow<'de, str>>()?;
                            if m != "tools/call" {
                                return Err(de::Error::custom("not a tools/call"));
                            }
                            method = true;
                        }
                        "params" if params.is_none() => params = Some(map.next_value::<Unique>()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            return Err(de::Error::custom("not taken"));
                        }
                    }
                }
                match (version, id, method, params) {
                    (true, Some(id), true, Some(params)) => Ok(CallLine { id, params }),
                    _ => Err(de::Error::custom("not taken")),
                }
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// A JSON object whose keys each appear once (rmcp's reading and
/// serde_json's `Map` could differ on a repeated key: not taken).
struct Unique(JsonObject);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Unique;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
                let mut object = JsonObject::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value = map.next_value::<Value>()?;
                    if object.insert(key, value).is_some() {
                        return Err(de::Error::custom("a repeated key"));
                    }
                }
                Ok(Unique(object))
            }
        }
        deserializer.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn line(v: &Value) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(v).unwrap();
        bytes.push(b'\n');
        bytes
    }

    #[test]
    fn only_a_plain_call_line_is_read() {
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                          "params": {"name": "math.add", "arguments": {"a": 1},
                                     "_meta": {"k": 1}}});
        let (id, params) = parse_call(&line(&call)).unwrap();
        assert_eq!(id, NumberOrString::Number(7));
        let ClientRequest::CallToolRequest(request) = call_request(params).unwrap() else {
            panic!("a call")
        };
        assert_eq!(request.params.name, "math.add");
        assert!(
            request.params.meta.is_none(),
            "`_meta` goes to the extensions"
        );
        assert_eq!(
            request.extensions.get::<RequestMetaObject>().unwrap().0 .0,
            json!({"k": 1}).as_object().unwrap().clone()
        );
        for other in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "x"}, "extra": 1}),
            json!({"jsonrpc": "1.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}),
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "x"}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}),
            json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}]),
        ] {
            assert!(parse_call(&line(&other)).is_none(), "{other}");
        }
        let repeated =
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#;
        assert!(parse_call(repeated).is_none());
        let repeated_top =
            br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a"}}"#;
        assert!(parse_call(repeated_top).is_none());
        let bom = [b"\xEF\xBB\xBF".as_slice(), &line(&call)].concat();
        assert!(parse_call(&bom).is_none());
        let bad_meta = json!({"name": "x", "_meta": 3});
        assert!(call_request(bad_meta.as_object().unwrap().clone()).is_none());
    }
}
