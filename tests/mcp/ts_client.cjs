// The official TypeScript MCP SDK (1.x) client against a Toolmark server, as
// tests/mcp/typescript.rs runs it:
//   node ts_client.cjs <node_modules> stdio <server binary> [args…]
//   node ts_client.cjs <node_modules> http <url>
// It checks what a TypeScript host sees: every tool with a title and every
// annotation, schemas the SDK's ajv accepts without a warning, ok results, and
// error results (refused, invalid, the tool's own error) that the SDK returns
// instead of throwing "Structured content does not match the tool's output schema".
// Prints "all checks passed" on success; exits 1 with the failures otherwise.
'use strict';
const { createRequire } = require('node:module');
const path = require('node:path');

const [modules, mode, target, ...rest] = process.argv.slice(2);
const sdk = createRequire(path.join(modules, 'x.js'));
const { Client } = sdk('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = sdk('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = sdk('@modelcontextprotocol/sdk/client/streamableHttp.js');

const failures = [];
const check = (ok, what) => {
  if (!ok) failures.push(what);
};
// ajv reports unknown formats through console.warn: any is a failure.
const warnings = [];
for (const level of ['warn', 'error', 'log']) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    warnings.push(args.map(String).join(' '));
    original(...args);
  };
}
const STANDARD = new Set(['date-time', 'date', 'time', 'duration', 'email', 'idn-email',
  'hostname', 'idn-hostname', 'ipv4', 'ipv6', 'uri', 'uri-reference', 'iri', 'iri-reference',
  'uuid', 'uri-template', 'json-pointer', 'relative-json-pointer', 'regex']);
function formats(v, out) {
  if (Array.isArray(v)) v.forEach((x) => formats(x, out));
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (k === 'format' && typeof x === 'string') out.push(x);
      if (!['const', 'default', 'enum', 'examples'].includes(k)) formats(x, out);
    }
  }
  return out;
}
const errorOf = (r) => (r._meta || {})['toolmark/error'] || {};
const textOf = (r) => (r.content || []).map((c) => c.text || '').join('\n');

async function main() {
  const transport = mode === 'stdio'
    ? new StdioClientTransport({ command: target, args: rest, stderr: 'ignore' })
    : new StreamableHTTPClientTransport(new URL(target));
  const client = new Client({ name: 'toolmark-ts-check', version: '0' });
  await client.connect(transport);

  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  check(tools.length >= 5, `tools: ${tools.map((t) => t.name)}`);
  for (const t of tools) {
    check(typeof t.title === 'string' && t.title.length > 0, `${t.name} has a title`);
    const a = t.annotations || {};
    for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
      check(typeof a[hint] === 'boolean', `${t.name} sets ${hint}: ${JSON.stringify(a)}`);
    }
    const odd = formats([t.inputSchema, t.outputSchema], []).filter((f) => !STANDARD.has(f));
    check(odd.length === 0, `${t.name} has non-standard formats ${odd}`);
  }
  check(byName['pay.send'].annotations.openWorldHint === true, 'pay.send is open-world');
  check(byName['notes.list'].annotations.openWorldHint === false, 'notes.list is closed-world');
  check(byName['notes.list'].annotations.idempotentHint === true, 'notes.list is idempotent');

  // ok: the output matches the declared schema
  let r = await client.callTool({ name: 'notes.add', arguments: { text: 'buy milk' } });
  check(!r.isError && r.structuredContent && r.structuredContent.result === 1, `add: ${JSON.stringify(r)}`);
  r = await client.callTool({ name: 'notes.list', arguments: {} });
  check(JSON.stringify(r.structuredContent) === '{"result":["buy milk"]}', `list: ${JSON.stringify(r)}`);

  // errors of a tool with an output schema: returned, not thrown
  const errors = [
    ['the tool\'s own error', { name: 'notes.add', arguments: { text: '  ' } }, 'tool_error'],
    ['invalid input', { name: 'notes.add', arguments: { text: 42 } }, 'invalid'],
    ['rejected by the app', { name: 'pay.send', arguments: { to: 'bob', amount: 500, card: '4242 4242 4242 4242' } }, 'rejected'],
  ];
  for (const [what, call, code] of errors) {
    try {
      r = await client.callTool(call);
      check(r.isError === true, `${what}: isError ${JSON.stringify(r)}`);
      check(r.structuredContent === undefined, `${what}: no structuredContent ${JSON.stringify(r)}`);
      check(textOf(r).startsWith(`${code}: `), `${what}: text names ${code}: ${textOf(r)}`);
      check(errorOf(r).code === code, `${what}: _meta code ${JSON.stringify(r._meta)}`);
    } catch (e) {
      check(false, `${what}: the SDK threw ${e}`);
    }
  }
  check(textOf(r).includes('need a human'), `the rejection's reason: ${textOf(r)}`);
  r = await client.callTool({ name: 'pay.send', arguments: { to: 'ada', amount: 20, card: '4242 4242 4242 9876' } });
  check(!r.isError && String(r.structuredContent.result).includes('9876'), `paid: ${JSON.stringify(r)}`);

  await client.close();
  const formatWarnings = warnings.filter((w) => /format/i.test(w));
  check(formatWarnings.length === 0, `ajv warnings: ${formatWarnings}`);
  if (failures.length) {
    process.stdout.write(`FAILED:\n- ${failures.join('\n- ')}\n`);
    process.exit(1);
  }
  process.stdout.write('all checks passed\n');
}

main().catch((e) => {
  process.stdout.write(`FAILED: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
