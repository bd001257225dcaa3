// Toolmark WebMCP shim: registers this app's tools for browser agents.
//
// Served by `toolmark::webmcp` (Rust) beside its endpoints; load it with
//   <script type="module" src="/toolmark/webmcp.js"></script>
// and, optionally, give it the app's own confirmation dialog:
//   window.toolmarkWebMcp = { onConfirm: async (request, { signal }) => ({ approved: true }) };
// (before or after the module loads; `import { webmcp } from "/toolmark/webmcp.js"`
// gives the same object).
//
// No build step and no dependency. The page's token lives only in this module:
// it is sent as a header, never put in a URL or the DOM.

const BASE = new URL(".", import.meta.url);
const TAG = "[toolmark webmcp]";

const given = globalThis.toolmarkWebMcp;
const config = given && typeof given === "object" ? given : {};
let onConfirm = typeof config.onConfirm === "function" ? config.onConfirm : null;
let token = null;
let started = false;
let stream = null; // the AbortController of the open stream
let restart = false;
let refused = [];
let hidden = [];
let status = "starting";
let syncing = Promise.resolve();
let resolveReady;
const ready = new Promise((r) => { resolveReady = r; });
// Browser name → { controller, key, tool, handle }.
const registered = new Map();

Object.defineProperties(config, {
  onConfirm: {
    get: () => onConfirm,
    set: (f) => {
      const had = onConfirm !== null;
      onConfirm = typeof f === "function" ? f : null;
      // The server decides which tools a page without a dialog sees: tell it.
      if (started && had !== (onConfirm !== null)) reconnect();
    },
    enumerable: true,
    configurable: true,
  },
  ready: { get: () => ready, configurable: true },
  status: { get: () => status, configurable: true },
  refused: { get: () => refused.slice(), configurable: true },
  hidden: { get: () => hidden.slice(), configurable: true },
  tools: { get: () => [...registered.keys()], configurable: true },
});
globalThis.toolmarkWebMcp = config;
export const webmcp = config;
export default config;

function modelContext() {
  if (typeof document !== "undefined" && document.modelContext) return document.modelContext;
  if (typeof navigator !== "undefined" && navigator.modelContext) return navigator.modelContext;
  return null;
}

function headers(extra) {
  const h = { "X-Toolmark-WebMCP": "1", ...extra };
  if (token) h["X-Toolmark-Page"] = token;
  return h;
}

function post(path, body, signal) {
  return fetch(new URL(path, BASE), {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body ?? {}),
    credentials: "same-origin",
    cache: "no-store",
    signal,
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function mint() {
  token = null;
  const res = await post("page", {});
  if (!res.ok) throw new Error(`the app refused a page session (${res.status})`);
  token = (await res.json()).token;
}

function reconnect() {
  restart = true;
  if (stream) stream.abort();
}

// Lines of a fetch body, as they arrive.
async function* lines(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, i).replace(/\r$/, "");
      buf = buf.slice(i + 1);
    }
  }
  if (buf) yield buf;
}

// The tool stream: one per page; on every (re)connect the server sends the
// whole list, and `sync` registers only the difference.
async function connect() {
  let delay = 250;
  for (;;) {
    const controller = new AbortController();
    stream = controller;
    restart = false;
    try {
      if (!token) await mint();
      const res = await post("stream", { confirm: onConfirm !== null }, controller.signal);
      if (res.status === 401) {
        token = null; // the page session ended: open a new one (after the pause below)
        throw new Error("the page session ended");
      }
      if (!res.ok) throw new Error(`the tool stream was refused (${res.status})`);
      delay = 250;
      let event = "message";
      let data = [];
      for await (const line of lines(res.body)) {
        if (line === "") {
          if (event === "tools" && data.length) {
            const msg = JSON.parse(data.join("\n"));
            syncing = syncing.then(() => sync(msg)).catch((e) => console.error(TAG, e));
          }
          event = "message";
          data = [];
        } else if (line.startsWith("event:")) {
          event = line.slice(6).trim();
        } else if (line.startsWith("data:")) {
          data.push(line.slice(5).replace(/^ /, ""));
        }
      }
    } catch (e) {
      if (!restart) console.warn(TAG, "tool stream interrupted:", e && e.message ? e.message : e);
    }
    if (restart) continue;
    await sleep(delay);
    delay = Math.min(delay * 2, 10000);
  }
}

const keyOf = (t) => JSON.stringify([t.description, t.title, t.inputSchema, t.annotations]);

function unregister(mc, name) {
  const r = registered.get(name);
  if (!r) return;
  registered.delete(name);
  r.controller.abort();
  try {
    if (r.handle && typeof r.handle.unregister === "function") r.handle.unregister();
    else if (typeof mc.unregisterTool === "function") mc.unregisterTool(name);
  } catch (_) {
    // Already gone with the aborted signal.
  }
}

async function sync(msg) {
  const mc = modelContext();
  const want = new Map(msg.tools.map((t) => [t.name, t]));
  for (const [name, r] of [...registered]) {
    const t = want.get(name);
    if (!t || keyOf(t) !== r.key) unregister(mc, name);
  }
  const lost = [];
  for (const t of msg.tools) {
    if (registered.has(t.name)) continue;
    const controller = new AbortController();
    const def = {
      name: t.name,
      description: t.description,
      inputSchema: t.inputSchema,
      annotations: t.annotations,
      execute: (input, client) => execute(t, input, client),
    };
    if (t.title) def.title = t.title;
    try {
      const handle = await mc.registerTool(def, { signal: controller.signal });
      registered.set(t.name, { controller, key: keyOf(t), tool: t, handle });
    } catch (e) {
      controller.abort();
      lost.push({ name: t.name, tool: t.toolmarkName, reason: String((e && e.message) || e) });
    }
  }
  // Browsers drop some names without an error: check what was kept.
  if (typeof mc.getTools === "function") {
    try {
      const listed = new Set((await mc.getTools()).map((t) => t.name));
      for (const [name, r] of [...registered]) {
        if (!listed.has(name)) {
          unregister(mc, name);
          lost.push({ name, tool: r.tool.toolmarkName, reason: "registered, but not listed by getTools()" });
        }
      }
    } catch (e) {
      console.warn(TAG, "getTools() failed:", e);
    }
  }
  refused = lost;
  hidden = msg.hidden || [];
  status = "ready";
  if (lost.length) {
    console.error(TAG, `the browser did not register ${lost.length} tool(s):`, lost);
    post("report", { refused: lost.map(({ name, reason }) => ({ name, reason })) }).catch(() => {});
  }
  if (hidden.length) {
    console.warn(
      TAG,
      `this page has no onConfirm: ${hidden.length} tool(s) that need the user's confirmation are not offered to browser agents:`,
      hidden.join(", "),
    );
  }
  if (typeof dispatchEvent === "function" && typeof CustomEvent === "function") {
    dispatchEvent(new CustomEvent("toolmark-webmcp-sync", { detail: { tools: [...registered.keys()], refused: lost, hidden } }));
  }
  resolveReady();
}

function failure(code, message) {
  return {
    content: [{ type: "text", text: `${code}: ${message}` }],
    structuredContent: { code, message, issues: [] },
    isError: true,
  };
}

// The app's dialog, inside `requestUserInteraction` where the browser offers it.
async function ask(request, client, signal) {
  const dialog = onConfirm;
  if (!dialog) return { approved: false, reason: "This page has no confirmation dialog" };
  const run = () => Promise.resolve(dialog(request, { signal }));
  let d;
  try {
    d = client && typeof client.requestUserInteraction === "function"
      ? await client.requestUserInteraction(run)
      : await run();
  } catch (e) {
    console.error(TAG, "onConfirm failed:", e);
    return { approved: false, reason: "The confirmation dialog failed" };
  }
  d = d && typeof d === "object" ? d : {};
  const answer = { confirmId: request.confirmId, approved: d.approved === true };
  if (d.input !== undefined) answer.input = d.input;
  if (typeof d.reason === "string") answer.reason = d.reason;
  return answer;
}

async function execute(tool, input, client) {
  const signal = client && client.signal instanceof AbortSignal ? client.signal : undefined;
  if (typeof input === "string") {
    try {
      input = JSON.parse(input);
    } catch (_) {
      // Sent as given: the app refuses it as invalid.
    }
  }
  let res;
  try {
    res = await post("call", { tool: tool.name, input: input ?? {} }, signal);
  } catch (e) {
    return signal && signal.aborted
      ? failure("cancelled", "The call was cancelled")
      : failure("unavailable", "The app could not be reached");
  }
  if (res.status === 401) {
    token = null;
    reconnect();
    return failure("unavailable", "The page's session ended; its tools are being registered again: call again");
  }
  if (!res.ok) {
    let message = `The app refused the call (${res.status})`;
    try {
      message = (await res.json()).message || message;
    } catch (_) {}
    return failure(res.status === 429 ? "busy" : "unavailable", message);
  }
  // A dialog is open while the call waits for its answer; the call goes on
  // reading, so a result that comes first (expiry, cancellation) closes it.
  const dialogs = new Set();
  const closeDialogs = () => {
    for (const d of dialogs) d.abort();
    dialogs.clear();
  };
  if (signal) signal.addEventListener("abort", closeDialogs, { once: true });
  try {
    for await (const line of lines(res.body)) {
      if (!line) continue;
      const msg = JSON.parse(line);
      if (msg.type === "confirm") {
        const dialog = new AbortController();
        dialogs.add(dialog);
        ask(msg.request, client, dialog.signal)
          .then((answer) => {
            dialogs.delete(dialog);
            if (dialog.signal.aborted) return null;
            return post("answer", answer, signal);
          })
          .then((sent) => {
            if (sent && !sent.ok && sent.status !== 404) console.warn(TAG, "the answer was refused:", sent.status);
          })
          .catch(() => {});
      } else if (msg.type === "result") {
        closeDialogs();
        return msg.result;
      }
    }
  } catch (e) {
    closeDialogs();
    if (signal && signal.aborted) return failure("cancelled", "The call was cancelled");
    return failure("unavailable", "The connection to the app was lost during the call");
  } finally {
    if (signal) signal.removeEventListener("abort", closeDialogs);
  }
  closeDialogs();
  return failure("unavailable", "The app closed the call without a result");
}

function start() {
  const mc = modelContext();
  if (!mc || typeof mc.registerTool !== "function") {
    status = "unsupported";
    console.warn(
      TAG,
      "this browser has no WebMCP (neither document.modelContext nor navigator.modelContext): " +
        "browser agents cannot see this page's tools. Use a browser with WebMCP enabled, " +
        "or load a polyfill (such as @mcp-b/webmcp-polyfill) before this script.",
    );
    resolveReady();
    return;
  }
  started = true;
  connect();
}

// After the modules that import this one have run (they may set onConfirm).
setTimeout(start, 0);
