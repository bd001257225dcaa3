//! [`RedisStore`]: deferred confirmations in Redis, shared by every instance.
//!
//! Keys (under a prefix, default `toolmark`): `{p}:rec:{id}` the record (its JSON:
//! the sealed confirmation and the store's hints, with a TTL), `{p}:used:{id}` the
//! tombstone of a used id (the token of the take that used it, the record's seq,
//! the record; with a TTL), `{p}:order` (sorted set, seq → id), `{p}:exp` (expiry →
//! id), `{p}:caller:{caller}` (per caller, seq → id), `{p}:seq` (the counter), the
//! remembered decisions (`{p}:rem`: `{caller}:{tool}` → the sealed decision, with
//! `{p}:rem:id`, `{p}:rem:ids`, `{p}:rem:order` and `{p}:rem:seq` to find, revoke
//! and cap them), the shared scope states (`{p}:scopes`: path → the sealed
//! state, `{p}:scopes:seq`: path → its seq, `{p}:scope:seq` the counter), and the
//! pub/sub channel `{p}:bridge` (sealed messages). Every
//! operation that reads and changes is one Lua script, so it is atomic across
//! instances: a take gets a record once, and the caps evict the oldest across
//! every instance's records.

use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{IntoConnectionInfo, ProtocolVersion, PushKind, Script, Value as RValue};
use tokio::sync::broadcast;

use super::{
    to_ms, CapKind, Caps, ConfirmRecord, ConfirmStore, DecisionRecord, Evicted, ScopeRecord,
    StoreError, MAX_REMEMBERED,
};
use crate::Caller;

/// Options of [`RedisStore::connect_with`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RedisStoreOptions {
    /// The key prefix (default `"toolmark"`): instances that share confirmations
    /// use the same one.
    pub prefix: String,
    /// How long one operation may take before it fails `unavailable` (default 2 s).
    pub timeout: Duration,
    /// How long Redis keeps a record past its expiry (default 1 hour): a backstop
    /// for records no instance swept. The toolmark's clock, not this TTL, decides
    /// whether a confirmation expired.
    pub ttl_grace: Duration,
}

impl Default for RedisStoreOptions {
    fn default() -> Self {
        RedisStoreOptions {
            prefix: "toolmark".to_owned(),
            timeout: Duration::from_secs(2),
            ttl_grace: Duration::from_secs(3600),
        }
    }
}

impl RedisStoreOptions {
    /// These options with another key prefix.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// These options with another operation timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// A [`ConfirmStore`] in Redis (feature `redis`): every instance of the app given
/// the same URL and prefix shares the pending confirmations, and a resolution on
/// one instance reaches every instance's bridge over Redis pub/sub.
///
/// It reconnects on its own; while Redis cannot be reached, calls that need a
/// confirmation and approvals are refused `unavailable` (nothing runs, nothing
/// stored before is lost), and bridge messages published meanwhile are missed by
/// the other instances. Once Redis is back, a request is not refused for a
/// reconnect that failed while it was away: a request whose connection was
/// refused never reached Redis, so it is sent once more, on a new connection,
/// within the same timeout.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use toolmark::store::RedisStore;
/// let store = RedisStore::connect("redis://127.0.0.1:6379").await?;
/// let key: [u8; 32] = *b"an app secret of thirty-two byte"; // load yours from a secret store
/// let tm = toolmark::Toolmark::builder().confirm_store(store).seal_key(key).build()?;
/// # let _ = tm; Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    conn: ConnectionManager,
    options: RedisStoreOptions,
    bus: broadcast::Sender<String>,
    /// The heartbeat stops when the last clone is dropped.
    _alive: std::sync::Arc<()>,
}

/// How often an idle store pings Redis, so that after a fault the connection (and
/// with it the bridge subscription) comes back without waiting for traffic.
const HEARTBEAT: Duration = Duration::from_millis(500);

async fn heartbeat(mut conn: ConnectionManager, alive: std::sync::Weak<()>, timeout: Duration) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        if alive.upgrade().is_none() {
            return;
        }
        let ping = redis::cmd("PING");
        let _ = tokio::time::timeout(timeout, ping.query_async::<String>(&mut conn)).await;
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.options.prefix)
            .finish_non_exhaustive()
    }
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::unavailable(e.to_string())
}

/// Remove one id from every index and return its record and seq.
const REMOVE: &str = r"
local function remove(p, id, callers)
  local v = redis.call('GET', p .. ':rec:' .. id)
  local s = redis.call('ZSCORE', p .. ':order', id)
  redis.call('DEL', p .. ':rec:' .. id)
  redis.call('ZREM', p .. ':order', id)
  redis.call('ZREM', p .. ':exp', id)
  for _, c in ipairs(callers) do redis.call('ZREM', p .. ':caller:' .. c, id) end
  return v, s
end
-- Keep the record `v` (seq `s`) of `id` in its tombstone: the take's token, the
-- seq, the record.
local function bury(p, id, token, s, v, ttl)
  redis.call('SET', p .. ':used:' .. id, token .. '\n' .. tostring(s) .. '\n' .. v, 'PX', ttl)
end
local function oldest(p, key, callers)
  while true do
    local r = redis.call('ZRANGE', key, 0, 0)
    if #r == 0 then return nil end
    if redis.call('EXISTS', p .. ':rec:' .. r[1]) == 1 then return r[1] end
    remove(p, r[1], callers)
  end
end
";

/// ARGV: prefix, id, json, caller, expires_ms, ttl_ms, max, per_caller, hard, callers…
const PUT: &str = r"
local p, id, json, caller = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local exp, ttl = tonumber(ARGV[5]), tonumber(ARGV[6])
local max, share, hard = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9] == '1'
local callers = {}
for i = 10, #ARGV do callers[#callers + 1] = ARGV[i] end
local seq = redis.call('INCR', p .. ':seq')
redis.call('SET', p .. ':rec:' .. id, json, 'PX', ttl)
redis.call('ZADD', p .. ':order', seq, id)
redis.call('ZADD', p .. ':exp', exp, id)
redis.call('ZADD', p .. ':caller:' .. caller, seq, id)
local out = {tostring(seq)}
local function evict(vid, cap)
  local v, s = remove(p, vid, callers)
  if v then
    bury(p, vid, '', s, v, ttl)
    out[#out + 1] = v
    out[#out + 1] = tostring(s)
    out[#out + 1] = cap
  end
end
local mine = p .. ':caller:' .. caller
if hard then
  while redis.call('ZCARD', mine) > share do
    local v = oldest(p, mine, callers)
    if not v then break end
    evict(v, 'per_caller')
  end
end
while redis.call('ZCARD', p .. ':order') > max do
  local victim, cap = nil, 'global'
  if redis.call('ZCARD', mine) > share then
    victim, cap = oldest(p, mine, callers), 'per_caller'
  else
    local best, bestseq = nil, nil
    for _, c in ipairs(callers) do
      local key = p .. ':caller:' .. c
      if redis.call('ZCARD', key) > share then
        local r = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
        if #r > 0 and (bestseq == nil or tonumber(r[2]) < bestseq) then
          best, bestseq = key, tonumber(r[2])
        end
      end
    end
    if best then
      victim, cap = oldest(p, best, callers), 'per_caller'
    else
      victim = oldest(p, p .. ':order', callers)
    end
  end
  if not victim then break end
  evict(victim, cap)
end
return out
";

/// ARGV: prefix, id, token, ttl_ms, callers…
const TAKE: &str = r"
local p, id, token, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local callers = {}
for i = 5, #ARGV do callers[#callers + 1] = ARGV[i] end
local used = redis.call('GET', p .. ':used:' .. id)
if used then
  -- A record written back under a used id is removed, never returned.
  remove(p, id, callers)
  local a = string.find(used, '\n', 1, true)
  if not a or token == '' or string.sub(used, 1, a - 1) ~= token then return {} end
  local b = string.find(used, '\n', a + 1, true)
  if not b then return {} end
  return {string.sub(used, b + 1), string.sub(used, a + 1, b - 1)}
end
local v, s = remove(p, id, callers)
if not v then return {} end
bury(p, id, token, s, v, ttl)
return {v, tostring(s)}
";

/// ARGV: prefix, id, token
const RESTORE: &str = r"
local p, id, token = ARGV[1], ARGV[2], ARGV[3]
local key = p .. ':used:' .. id
local used = redis.call('GET', key)
if not used or token == '' then return 0 end
local a = string.find(used, '\n', 1, true)
if not a or string.sub(used, 1, a - 1) ~= token then return 0 end
local b = string.find(used, '\n', a + 1, true)
if not b then return 0 end
local seq, v = string.sub(used, a + 1, b - 1), string.sub(used, b + 1)
local ok, rec = pcall(cjson.decode, v)
if not ok or type(rec) ~= 'table' or type(rec.caller) ~= 'string' or type(rec.expiresMs) ~= 'number' then
  return 0
end
local ttl = redis.call('PTTL', key)
if ttl < 1 then ttl = 1 end
redis.call('SET', p .. ':rec:' .. id, v, 'PX', ttl)
redis.call('ZADD', p .. ':order', seq, id)
redis.call('ZADD', p .. ':exp', rec.expiresMs, id)
redis.call('ZADD', p .. ':caller:' .. rec.caller, seq, id)
redis.call('DEL', key)
return 1
";

/// ARGV: prefix
const LIST: &str = r"
local p = ARGV[1]
local ids = redis.call('ZRANGE', p .. ':order', 0, -1, 'WITHSCORES')
local out = {}
for i = 1, #ids, 2 do
  local v = redis.call('GET', p .. ':rec:' .. ids[i])
  if v and redis.call('EXISTS', p .. ':used:' .. ids[i]) == 0 then
    out[#out + 1] = v
    out[#out + 1] = ids[i + 1]
  end
end
return out
";

/// ARGV: prefix, now_ms, callers…
const EXPIRED: &str = r"
local p = ARGV[1]
local callers = {}
for i = 3, #ARGV do callers[#callers + 1] = ARGV[i] end
local ids = redis.call('ZRANGEBYSCORE', p .. ':exp', '-inf', ARGV[2])
local out = {}
for _, id in ipairs(ids) do
  local v, s = remove(p, id, callers)
  -- A record under a used id is removed, never returned.
  if v and redis.call('EXISTS', p .. ':used:' .. id) == 0 then
    out[#out + 1] = v
    out[#out + 1] = tostring(s)
  end
end
return out
";

/// Drop the remembered decision kept under one field from every index.
const DROP: &str = r"
local function drop(p, f)
  local id = redis.call('HGET', p .. ':rem:id', f)
  redis.call('HDEL', p .. ':rem', f)
  redis.call('HDEL', p .. ':rem:id', f)
  if id then redis.call('HDEL', p .. ':rem:ids', id) end
  redis.call('ZREM', p .. ':rem:order', f)
end
";

/// ARGV: prefix, field (`{caller}:{tool}`), id, json, max
const REMEMBER: &str = r"
local p, f, id, json, max = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
drop(p, f)
local seq = redis.call('INCR', p .. ':rem:seq')
redis.call('HSET', p .. ':rem', f, json)
redis.call('HSET', p .. ':rem:id', f, id)
redis.call('HSET', p .. ':rem:ids', id, f)
redis.call('ZADD', p .. ':rem:order', seq, f)
while redis.call('ZCARD', p .. ':rem:order') > max do
  drop(p, redis.call('ZRANGE', p .. ':rem:order', 0, 0)[1])
end
return 1
";

/// ARGV: prefix, id
const FORGET: &str = r"
local p = ARGV[1]
local f = redis.call('HGET', p .. ':rem:ids', ARGV[2])
if not f then return 0 end
drop(p, f)
return 1
";

/// ARGV: prefix
const REMEMBERED: &str = r"
local p = ARGV[1]
local out = {}
for _, f in ipairs(redis.call('ZRANGE', p .. ':rem:order', 0, -1)) do
  local v = redis.call('HGET', p .. ':rem', f)
  if v then out[#out + 1] = v end
end
return out
";

/// The next scope seq: above the counter and above the caller's floor.
const SCOPE_SEQ: &str = r"
local p = ARGV[1]
local floor = tonumber(ARGV[2]) or 0
local n = redis.call('INCR', p .. ':scope:seq')
if n <= floor then
  n = floor + 1
  redis.call('SET', p .. ':scope:seq', n)
end
return n
";

/// Keep a scope state unless the one kept under its path has a seq as high.
const PUT_SCOPE: &str = r"
local p = ARGV[1]
local cur = tonumber(redis.call('HGET', p .. ':scopes:seq', ARGV[2]) or '0') or 0
local seq = tonumber(ARGV[3]) or 0
if seq > cur then
  redis.call('HSET', p .. ':scopes', ARGV[2], ARGV[4])
  redis.call('HSET', p .. ':scopes:seq', ARGV[2], ARGV[3])
  return 1
end
return 0
";

fn script(body: &str) -> Script {
    Script::new(&format!("{REMOVE}\n{body}"))
}

struct Scripts {
    put: Script,
    take: Script,
    restore: Script,
    list: Script,
    expired: Script,
    remember: Script,
    forget: Script,
    remembered: Script,
    scope_seq: Script,
    put_scope: Script,
}

fn scripts() -> &'static Scripts {
    static SCRIPTS: std::sync::OnceLock<Scripts> = std::sync::OnceLock::new();
    SCRIPTS.get_or_init(|| Scripts {
        put: script(PUT),
        take: script(TAKE),
        restore: script(RESTORE),
        list: script(LIST),
        expired: script(EXPIRED),
        remember: Script::new(&format!("{DROP}\n{REMEMBER}")),
        forget: Script::new(&format!("{DROP}\n{FORGET}")),
        remembered: Script::new(REMEMBERED),
        scope_seq: Script::new(SCOPE_SEQ),
        put_scope: Script::new(PUT_SCOPE),
    })
}

/// A record and its seq, read back.
fn read_record(json: &str, seq: &str) -> Result<ConfirmRecord, StoreError> {
    let mut r: ConfirmRecord = serde_json::from_str(json).map_err(|_| StoreError::Corrupt {
        id: String::from("?"),
    })?;
    r.seq = seq.parse::<f64>().map_or(0, |s| s as u64);
    Ok(r)
}

/// The records of a listing; one that cannot be read is left out (the toolmark
/// would refuse it anyway), so it cannot stop the others from being listed.
fn pairs(out: &[String]) -> Result<Vec<ConfirmRecord>, StoreError> {
    Ok(out
        .chunks(2)
        .filter(|c| c.len() == 2)
        .filter_map(|c| match read_record(&c[0], &c[1]) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(target: "toolmark", error = %e, "a record in Redis cannot be read; left out");
                None
            }
        })
        .collect())
}

impl RedisStore {
    /// Connect to `url` (`redis://host:port/db`) with the default options.
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        RedisStore::connect_with(url, RedisStoreOptions::default()).await
    }

    /// Connect to `url` with `options`. Fails `unavailable` when Redis cannot be
    /// reached now.
    pub async fn connect_with(
        url: &str,
        options: RedisStoreOptions,
    ) -> Result<RedisStore, StoreError> {
        let info = url.into_connection_info().map_err(unavailable)?;
        // RESP3: the bridge subscription shares the connection and is renewed
        // after a reconnect.
        let settings = info
            .redis_settings()
            .clone()
            .set_protocol(ProtocolVersion::RESP3);
        let info = info.set_redis_settings(settings);
        let client = redis::Client::open(info).map_err(unavailable)?;
        let (bus, _) = broadcast::channel(1024);
        let tx = bus.clone();
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(options.timeout))
            .set_response_timeout(Some(options.timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500))
            .set_automatic_resubscription()
            .set_push_sender(move |info: redis::PushInfo| {
                if info.kind == PushKind::Message
                    && let Some(RValue::BulkString(bytes)) = info.data.get(1)
                    && let Ok(text) = String::from_utf8(bytes.clone())
                {
                    let _ = tx.send(text);
                }
                Ok::<(), std::convert::Infallible>(())
            });
        let mut conn = tokio::time::timeout(
            options.timeout,
            client.get_connection_manager_with_config(config),
        )
        .await
        .map_err(|_| unavailable("connection timed out"))?
        .map_err(unavailable)?;
        let channel = format!("{}:bridge", options.prefix);
        tokio::time::timeout(options.timeout, conn.subscribe(&channel))
            .await
            .map_err(|_| unavailable("subscribe timed out"))?
            .map_err(unavailable)?;
        let alive = std::sync::Arc::new(());
        tokio::spawn(heartbeat(
            conn.clone(),
            std::sync::Arc::downgrade(&alive),
            options.timeout,
        ));
        Ok(RedisStore {
            conn,
            options,
            bus,
            _alive: alive,
        })
    }

    /// One script, sent as [`ask`](Self::ask) says.
    async fn run<T: redis::FromRedisValue>(
        &self,
        inv: redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        let inv = &inv;
        self.ask(|mut conn| async move { inv.invoke_async(&mut conn).await })
            .await
    }

    /// One command, sent as [`ask`](Self::ask) says.
    async fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, StoreError> {
        self.ask(|mut conn| async move { cmd.query_async(&mut conn).await })
            .await
    }

    /// One request to Redis, bounded by the store's timeout (both tries together).
    ///
    /// A refused connection means the request was never sent: the connection
    /// manager answers it from its last failed reconnect and only then starts a new
    /// one. So it is sent once more, on that new connection: the first request after
    /// Redis comes back is not refused for the outage before it, and nothing can run
    /// twice (the first one never reached Redis).
    async fn ask<T, F>(&self, mut once: impl FnMut(ConnectionManager) -> F) -> Result<T, StoreError>
    where
        F: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let deadline = tokio::time::Instant::now() + self.options.timeout;
        let timed_out = |_| unavailable("the operation timed out");
        match tokio::time::timeout_at(deadline, once(self.conn.clone()))
            .await
            .map_err(timed_out)?
        {
            Err(e) if e.is_connection_refusal() => {
                tokio::time::timeout_at(deadline, once(self.conn.clone()))
                    .await
                    .map_err(timed_out)?
                    .map_err(unavailable)
            }
            done => done.map_err(unavailable),
        }
    }

    /// How long Redis keeps a key meant to live until `until_ms` (the toolmark's
    /// clock): what is left of it by this machine's clock, plus the grace.
    fn ttl_ms(&self, until_ms: u64) -> u64 {
        let left = until_ms.saturating_sub(to_ms(SystemTime::now()));
        let grace = u64::try_from(self.options.ttl_grace.as_millis()).unwrap_or(u64::MAX);
        left.saturating_add(grace).max(1)
    }

    /// The field of the decision kept for `tool` and `caller`.
    fn field(tool: &str, caller: Caller) -> String {
        format!("{}:{tool}", caller.as_str())
    }

    fn callers() -> impl Iterator<Item = &'static str> {
        Caller::ALL.iter().map(|c| c.as_str())
    }
}

impl ConfirmStore for RedisStore {
    fn put(
        &self,
        record: ConfirmRecord,
        caps: Caps,
    ) -> BoxFuture<'_, Result<Vec<Evicted>, StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(&record).map_err(|_| StoreError::Corrupt {
                id: record.id.clone(),
            })?;
            let s = &scripts().put;
            let mut inv = s.prepare_invoke();
            inv.arg(&self.options.prefix)
                .arg(&record.id)
                .arg(json)
                .arg(record.caller.as_str())
                .arg(record.expires_ms)
                .arg(self.ttl_ms(record.expires_ms))
                .arg(caps.max)
                .arg(caps.per_caller)
                .arg(if caps.hard { "1" } else { "0" });
            for c in Self::callers() {
                inv.arg(c);
            }
            let out: Vec<String> = self.run(inv).await?;
            // A record pushed out that cannot be read is left out: it was buried,
            // and the toolmark could not have opened it.
            Ok(out
                .get(1..)
                .unwrap_or_default()
                .chunks(3)
                .filter(|c| c.len() == 3)
                .filter_map(|c| {
                    Some(Evicted {
                        record: read_record(&c[0], &c[1]).ok()?,
                        cap: if c[2] == "global" {
                            CapKind::Global
                        } else {
                            CapKind::PerCaller
                        },
                    })
                })
                .collect())
        })
    }

    fn take<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        keep_until: SystemTime,
    ) -> BoxFuture<'a, Result<Option<ConfirmRecord>, StoreError>> {
        Box::pin(async move {
            let s = &scripts().take;
            let mut inv = s.prepare_invoke();
            inv.arg(&self.options.prefix)
                .arg(id)
                .arg(token)
                .arg(self.ttl_ms(to_ms(keep_until)));
            for c in Self::callers() {
                inv.arg(c);
            }
            let out: Vec<String> = self.run(inv).await?;
            match out.as_slice() {
                [json, seq] => read_record(json, seq).map(Some),
                _ => Ok(None),
            }
        })
    }

    fn restore<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let s = &scripts().restore;
            let mut inv = s.prepare_invoke();
            inv.arg(&self.options.prefix).arg(id).arg(token);
            let back: i64 = self.run(inv).await?;
            Ok(back == 1)
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
        Box::pin(async move {
            let s = &scripts().list;
            let mut inv = s.prepare_invoke();
            inv.arg(&self.options.prefix);
            let out: Vec<String> = self.run(inv).await?;
            pairs(&out)
        })
    }

    fn take_expired(
        &self,
        now: SystemTime,
    ) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
        Box::pin(async move {
            let s = &scripts().expired;
            let mut inv = s.prepare_invoke();
            inv.arg(&self.options.prefix).arg(to_ms(now));
            for c in Self::callers() {
                inv.arg(c);
            }
            let out: Vec<String> = self.run(inv).await?;
            pairs(&out)
        })
    }

    fn publish(&self, message: String) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let channel = format!("{}:bridge", self.options.prefix);
            let mut cmd = redis::cmd("PUBLISH");
            cmd.arg(channel).arg(message);
            let _: i64 = self.query(&cmd).await?;
            Ok(())
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<String> {
        self.bus.subscribe()
    }

    fn remember(&self, decision: DecisionRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(&decision).map_err(|_| StoreError::Corrupt {
                id: decision.id.clone(),
            })?;
            let s = &scripts().remember;
            let mut inv = s.prepare_invoke();
            inv.arg(&self.options.prefix)
                .arg(Self::field(&decision.tool, decision.caller))
                .arg(&decision.id)
                .arg(json)
                .arg(MAX_REMEMBERED);
            let _: i64 = self.run(inv).await?;
            Ok(())
        })
    }

    fn remembered_for<'a>(
        &'a self,
        tool: &'a str,
        caller: Caller,
    ) -> BoxFuture<'a, Result<Option<DecisionRecord>, StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("HGET");
            cmd.arg(format!("{}:rem", self.options.prefix))
                .arg(Self::field(tool, caller));
            let json: Option<String> = self.query(&cmd).await?;
            json.map(|j| read_remembered(&j)).transpose()
        })
    }

    fn remembered(&self) -> BoxFuture<'_, Result<Vec<DecisionRecord>, StoreError>> {
        Box::pin(async move {
            let s = &scripts().remembered;
            let mut inv = s.prepare_invoke();
            inv.arg(&self.options.prefix);
            let out: Vec<String> = self.run(inv).await?;
            Ok(out.iter().filter_map(|j| read_remembered(j).ok()).collect())
        })
    }

    fn forget<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let s = &scripts().forget;
            let mut inv = s.prepare_invoke();
            inv.arg(&self.options.prefix).arg(id);
            let gone: i64 = self.run(inv).await?;
            Ok(gone == 1)
        })
    }

    fn keeps_scopes(&self) -> bool {
        true
    }

    fn next_scope_seq(&self, at_least: u64) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let s = &scripts().scope_seq;
            let mut inv = s.prepare_invoke();
            inv.arg(&self.options.prefix).arg(at_least);
            self.run(inv).await
        })
    }

    fn put_scope(&self, record: ScopeRecord) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(&record).map_err(|_| StoreError::Corrupt {
                id: record.path.clone(),
            })?;
            let s = &scripts().put_scope;
            let mut inv = s.prepare_invoke();
            inv.arg(&self.options.prefix)
                .arg(&record.path)
                .arg(record.seq)
                .arg(json);
            let kept: i64 = self.run(inv).await?;
            Ok(kept == 1)
        })
    }

    fn scopes(&self) -> BoxFuture<'_, Result<Vec<ScopeRecord>, StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("HVALS");
            cmd.arg(format!("{}:scopes", self.options.prefix));
            let all: Vec<String> = self.query(&cmd).await?;
            // One that cannot be read is left out (it would not open anyway).
            Ok(all
                .iter()
                .filter_map(|j| serde_json::from_str(j).ok())
                .collect())
        })
    }
}

/// A remembered decision, read back.
fn read_remembered(json: &str) -> Result<DecisionRecord, StoreError> {
    serde_json::from_str(json).map_err(|_| StoreError::Corrupt {
        id: String::from("?"),
    })
}
