//! Serving over a byte stream (stdio): a self-contained `tools/call` answered
//! without a trip through rmcp's serve loop.
//!
//! rmcp's stdio transport parses every line into its `JsonRpcMessage` (an
//! untagged union of unions: the line is buffered, then tried against each
//! request type in turn), its serve loop spawns the handler, and the answer
//! comes back through a channel, the loop and a second task to the writer.
//! [`McpServer::serve_io`](super::McpServer::serve_io) puts a front in its
//! place: it reads each line once and answers the `tools/call` lines it can
//! answer itself; every other line it parses once, into rmcp's own message
//! type, and hands the message to rmcp's own service for the same session
//! (through a message-level transport, behind [`Quiet`]); what that service
//! sends is written as rmcp's codec writes it, a whole line at a time, under
//! the same writer as the front's answers.
//!
//! A line that is not a message is answered as rmcp's stdio transport
//! answers it, and logged without its bytes (at most the category of the
//! parse error: rmcp's transport logs the line, and serde's error quoting it,
//! at DEBUG): an empty line, unparsable JSON (a byte-order mark and a `\r`
//! before the `\n` are read past, as rmcp does) or a notification rmcp
//! ignores (a method without an `id` that is not MCP's, or a
//! `notifications/` method MCP does not define) is ignored; well-formed JSON
//! of no message's shape gets an `Invalid Request` error without an id; a
//! line over rmcp's 16 MiB limit is dropped (logged with the limit). The
//! input ends, as with rmcp, at the end of the stream or a read error; an
//! unterminated last line is dropped.
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
//! rmcp's logging: the loop that logs what it receives never sees the line;
//! every other message reaches it through [`Quiet`].

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientNotification,
    ClientRequest, GetExtensions, GetMeta, JsonObject, JsonRpcMessage, JsonRpcVersion2_0,
    NumberOrString, RequestMetaObject, ServerJsonRpcMessage,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, Service, ServiceExt};
use rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
use rmcp::transport::Transport;
use rmcp::{ErrorData, RoleServer};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::handler::McpSession;
use super::{McpServer, Quiet};

/// How many parsed messages may wait for rmcp's service (the pipe it read
/// before).
const QUEUE: usize = 64;

/// The longest line read (rmcp's stdio transport's limit, 16 MiB, its `\n`
/// included); a longer one is dropped, as rmcp drops it.
const MAX_LINE: usize = DEFAULT_MAX_LINE_LENGTH;

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
        out: out.clone(),
    });
    let (to_rmcp, rmcp_in) = tokio::sync::mpsc::channel(QUEUE);
    // rmcp's own service for everything the front does not take: parsed
    // messages in, its messages out on the front's writer.
    let transport = Quiet::new(Piped {
        rx: rmcp_in,
        out: out.clone(),
    });
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

    let mut lines = Lines::new(read);
    loop {
        let next = tokio::select! {
            biased;
            () = rmcp_done.cancelled() => break,
            next = lines.next() => next,
        };
        match next {
            Next::Line => {}
            Next::Oversized => {
                tracing::error!(
                    target: "toolmark::mcp",
                    max_line_length = MAX_LINE,
                    "an incoming line exceeded the maximum line length: dropped"
                );
                continue;
            }
            Next::End => break,
        }
        let line = lines.line();
        if line.is_empty() {
            continue;
        }
        if front.take(line) {
            continue;
        }
        let message = match parse(line) {
            Parsed::Message(message) => message,
            Parsed::Ignored => continue,
            Parsed::Invalid => {
                // rmcp's transport answers it, with no id to correlate.
                let reply = ServerJsonRpcMessage::error(
                    ErrorData::invalid_request("Invalid request", None),
                    None,
                );
                if out.message(&reply).await.is_err() {
                    break;
                }
                continue;
            }
        };
        front.cancelled(&message);
        if to_rmcp.send(message).await.is_err() {
            break;
        }
    }
    // The end of input: rmcp's service sees it too, answers what it has in
    // flight and ends; so do the calls in flight here.
    drop(to_rmcp);
    front.drain().await;
    let served = serving.await.map_err(std::io::Error::other)?;
    out.close().await;
    served
}

/// rmcp's side of the front: the messages the front parsed and did not take,
/// and what rmcp's service sends, written as rmcp's codec writes it (one line,
/// flushed) on the front's writer.
struct Piped<W> {
    rx: tokio::sync::mpsc::Receiver<ClientJsonRpcMessage>,
    out: Out<W>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> Transport<RoleServer> for Piped<W> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move { out.message(&item).await }
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.rx.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The writer is the front's too: it closes it once both paths ended.
        self.rx.close();
        Ok(())
    }
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

    /// Write `message` as rmcp's codec does (its JSON and a `\n`) and flush it.
    async fn message(&self, message: &ServerJsonRpcMessage) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec(message)?;
        bytes.push(b'\n');
        if self.line(&bytes).await {
            Ok(())
        } else {
            Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "Transport is closed",
            ))
        }
    }

    /// Write one line and flush it; `false` once the writer failed or was
    /// closed.
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
            // The call's progress and log messages went out through rmcp's
            // service before it ended (a notification's send returns once its
            // line is written): they come first.
            if let Err(error) = front.out.message(&message).await
                && error.kind() != std::io::ErrorKind::NotConnected
            {
                tracing::error!(target: "toolmark::mcp", %error, "could not write an answer");
            }
            front.answered.notify_waiters();
        }));
        true
    }

    /// A `notifications/cancelled` naming a call running here cancels it (the
    /// message still goes on to the session, as rmcp's loop hands it on).
    fn cancelled(&self, message: &ClientJsonRpcMessage) {
        let JsonRpcMessage::Notification(n) = message else {
            return;
        };
        let ClientNotification::CancelledNotification(c) = &n.notification else {
            return;
        };
        let Some(id) = &c.params.request_id else {
            return;
        };
        if let Some(ct) = lock(&self.inflight).remove(id) {
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
    /// A whole line no longer than [`MAX_LINE`], in [`Lines::line`].
    Line,
    /// A line longer than [`MAX_LINE`]: dropped.
    Oversized,
    /// The end of input (an unterminated last line is dropped, as rmcp does),
    /// or a read error.
    End,
}

/// The front's line reader, rmcp's `AsyncRwTransport::read_line`: bounded by
/// [`MAX_LINE`] and cancel-safe (a partial line stays in `line`, and a
/// dropped line's tail is skipped across calls).
struct Lines<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// Skipping the rest of a line over [`MAX_LINE`].
    discarding: bool,
    /// A whole line was returned last time: clear it first.
    done: bool,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    fn new(read: R) -> Self {
        Lines {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            done: false,
        }
    }

    /// The last whole line, without its `\n` and a `\r` before it (as rmcp
    /// reads it).
    fn line(&self) -> &[u8] {
        let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        line.strip_suffix(b"\r").unwrap_or(line)
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
                if self.discarding {
                    self.discarding = newline.is_none();
                    (take, None)
                } else if self.line.len().saturating_add(take) > MAX_LINE {
                    self.line.clear();
                    self.discarding = newline.is_none();
                    (take, Some(Next::Oversized))
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

/// What a line not taken is to rmcp's transport.
// Returned once per line and moved on at once: a box would be an allocation
// per message for nothing.
#[allow(clippy::large_enum_variant)]
enum Parsed {
    /// A message for rmcp's service.
    Message(ClientJsonRpcMessage),
    /// Unparsable JSON, or a notification rmcp ignores for compatibility.
    Ignored,
    /// Well-formed JSON of no message's shape: rmcp answers an `Invalid
    /// Request` error with a null id.
    Invalid,
}

/// Parse a line (without its line ending, not empty) as rmcp's stdio
/// transport does (`try_parse_with_compatibility`), but log nothing of the
/// line or of serde's message (which quotes values): only the error's
/// category.
fn parse(line: &[u8]) -> Parsed {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => return Parsed::Message(message),
        Err(error) => error,
    };
    if std::str::from_utf8(line).is_ok()
        && let Ok(value) = serde_json::from_slice::<Value>(line)
        && let Some(method) = value.get("method").and_then(Value::as_str)
        && ignored_notification(&value, method)
    {
        tracing::trace!(target: "toolmark::mcp", "ignoring a non-standard notification");
        return Parsed::Ignored;
    }
    let category = error.classify();
    match category {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            tracing::debug!(target: "toolmark::mcp", ?category, "ignoring an unparsable incoming line");
            Parsed::Ignored
        }
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            tracing::debug!(target: "toolmark::mcp", ?category, "an incoming line of no message's shape");
            Parsed::Invalid
        }
    }
}

/// rmcp's `should_ignore_notification`: a message without an `id` whose
/// method is not MCP's (an LSP notification, say), or a `notifications/`
/// method MCP does not define.
fn ignored_notification(value: &Value, method: &str) -> bool {
    (value.get("id").is_none() && !standard_method(method))
        || (method.starts_with("notifications/") && !standard_notification(method))
}

/// rmcp's `is_standard_method` (MCP 2026-07-28).
fn standard_method(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "server/discover"
            | "prompts/get"
            | "prompts/list"
            | "resources/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "resources/templates/list"
            | "subscriptions/listen"
            | "tools/call"
            | "tools/list"
            | "completion/complete"
            | "elicitation/create"
            | "logging/setLevel"
            | "roots/list"
            | "sampling/createMessage"
    ) || standard_notification(method)
}

/// rmcp's `is_standard_notification`.
fn standard_notification(method: &str) -> bool {
    matches!(
        method,
        "notifications/cancelled"
            | "notifications/initialized"
            | "notifications/message"
            | "notifications/progress"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed"
            | "notifications/resources/updated"
            | "notifications/roots/list_changed"
            | "notifications/subscriptions/acknowledged"
            | "notifications/tools/list_changed"
    )
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
