"""The official MCP Python SDK (mcp==2.3.0) against three examples/mcp_server
instances sharing one Redis, behind a small round-robin proxy: every request
goes to the next instance (no sticky sessions).

Usage: python_instances.py <url 1> <url 2> <url 3>

Checks: list, call, a confirmation by multi round-trip request approved on
another instance than the one that asked, a task polled across the instances
(and one cancelled on another instance than the one that runs it), the admin
scope shown and hidden through one instance and seen by every instance's next
list. Exits 0 when every check passed. Run by tests/mcp/instances.rs.
"""

import http.client
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import mcp_types as types
from mcp import Client

from python_client import SECRET, TaskCancel, TaskHandle, Tasks, check, code, seen, task_get, task_until

# (JSON-RPC method, backend index) of every request the proxy forwarded.
routed: list[tuple[str, int]] = []


def start_proxy(backends: list[str]) -> str:
    """A round-robin reverse proxy on a free loopback port: each request (not
    each connection) goes to the next backend; the reply is passed back whole."""
    targets = [urllib.parse.urlsplit(b) for b in backends]
    lock = threading.Lock()
    turn = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            with lock:
                i = turn[0] % len(targets)
                turn[0] += 1
            method = self.headers.get("Mcp-Method", "")
            routed.append((method, i))
            t = targets[i]
            conn = http.client.HTTPConnection(t.hostname, t.port, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            headers["Host"] = f"{t.hostname}:{t.port}"
            conn.request(self.command, t.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            conn.close()

        do_POST = _forward
        do_GET = _forward
        do_DELETE = _forward

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}{targets[0].path}"


def last(method: str) -> int:
    """The backend that served the last request of `method`."""
    return [i for m, i in routed if m == method][-1]


async def main(backends: list[str]) -> None:
    url = start_proxy(backends)
    tasks = Tasks()

    async def no_elicitation(ctx, params) -> types.ElicitResult:
        raise AssertionError("answered by hand in this test")

    async with Client(
        url, mode="auto", cache=None, extensions=[tasks], elicitation_callback=no_elicitation
    ) as client:
        check(client.protocol_version == "2026-07-28", f"version: {client.protocol_version}")
        session = client.session

        # list and call, each on whichever instance the proxy picks
        names = [t.name for t in (await client.list_tools()).tools]
        check("pay.send" in names and "admin.stats" not in names, f"names: {names}")
        r = await client.call_tool("notes.add", {"text": "on some instance"})
        check(not r.is_error, f"add: {r}")

        # MRTR approval answered on another instance than the one that asked
        # (the tasks extension is declared, so use a client without it here)
        async with Client(url, mode="auto", cache=None, elicitation_callback=no_elicitation) as plain:
            pay = {"to": "dee", "amount": 11, "card": SECRET}
            ir = await plain.session.call_tool("pay.send", pay, allow_input_required=True)
            seen.append(repr(ir))
            check(isinstance(ir, types.InputRequiredResult), f"input_required: {ir}")
            asked_on = last("tools/call")
            r = await plain.session.call_tool(
                "pay.send", pay, request_state=ir.request_state,
                input_responses={"confirm": types.ElicitResult(action="accept")}, allow_input_required=True,
            )
            seen.append(repr(r))
            answered_on = last("tools/call")
            check(asked_on != answered_on, f"asked and answered on one instance ({asked_on})")
            check(not r.is_error and "paid 11 EUR to dee" in r.structured_content["result"], f"approved: {r}")
            # a replay, on yet another instance, runs nothing
            r = await plain.session.call_tool(
                "pay.send", pay, request_state=ir.request_state,
                input_responses={"confirm": types.ElicitResult(action="accept")}, allow_input_required=True,
            )
            check(r.is_error and code(r) == "confirmation_expired", f"replayed: {r}")

        # a task polled across the instances
        r = await client.call_tool("slow.count", {"to": 30})
        check(r.structured_content == {"result": 30}, f"task result: {r}")
        polled = {i for m, i in routed if m == "tasks/get"}
        check(len(polled) >= 2, f"tasks/get served by {polled}")
        # a task cancelled on another instance than the one that runs it
        handle = await session.call_tool("slow.count", {"to": 1000}, allow_claimed=True)
        check(isinstance(handle, TaskHandle), f"long call: {handle}")
        runs_on = last("tools/call")
        await session.send_request(TaskCancel(method="tasks/cancel", params={"taskId": handle.task_id}), types.Result)
        check(last("tasks/cancel") != runs_on, "cancelled on the instance that runs it")
        state = await task_until(session, handle.task_id, {"cancelled", "completed", "failed"})
        check(state.status == "cancelled", f"cancelled across instances: {state}")

        # the admin scope shown through one instance shows on every instance
        await client.call_tool("settings.admin_mode", {"on": True})
        for _ in range(3):
            with anyio.fail_after(5):
                while "admin.stats" not in [t.name for t in (await client.list_tools()).tools]:
                    await anyio.sleep(0.05)
        served = {i for m, i in routed[-3:] if m == "tools/list"}
        check(len(served) == 3, f"the last three lists on three instances: {served}")
        await client.call_tool("settings.admin_mode", {"on": False})
        for _ in range(3):
            with anyio.fail_after(5):
                while "admin.stats" in [t.name for t in (await client.list_tools()).tools]:
                    await anyio.sleep(0.05)

    used = {i for _, i in routed}
    check(used == {0, 1, 2}, f"every instance served: {used}")
    check(not any(SECRET in m for m in seen), "the secret reached the client")
    print(f"python instances: all checks passed ({len(routed)} requests over {len(used)} instances)")


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1:4])
    except AssertionError as e:
        print(f"python instances: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
