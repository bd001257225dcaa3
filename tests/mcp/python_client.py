"""Drive examples/mcp_server with the official MCP Python SDK (mcp==2.3.0).

Usage: python_client.py stdio <path to mcp_server> [legacy | 2026]
       python_client.py http <url, e.g. http://127.0.0.1:PORT/mcp> [legacy | 2026]

`legacy` (the default) forces the 2025-11-25 session (initialize handshake);
`2026` negotiates 2026-07-28 (server/discover, stateless) against a server run
with `--confirm-by-elicitation --confirm-expiry-ms 1500` (and, over HTTP,
`--approval-page`).

Exits 0 when every check passed; prints the failing check otherwise. Run by
tests/mcp/python.rs.
"""

import sys
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from pydantic import Field

SECRET = "4111-2222-3333-9876"
seen: list[str] = []  # every message the client got, as text


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def code(r) -> str | None:
    """A refused call's code: in `_meta["toolmark/error"]` (an error result
    carries no structuredContent that could break the tool's output schema),
    else in `structuredContent` (a tool without an output schema)."""
    err = (r.meta or {}).get("toolmark/error")
    if err is not None:
        return err.get("code")
    return (r.structured_content or {}).get("code")


def message(r) -> str:
    """A refused call's message (see `code`)."""
    err = (r.meta or {}).get("toolmark/error")
    if err is not None:
        return err.get("message", "")
    return (r.structured_content or {}).get("message", "")


async def main(mode: str, target: str) -> None:
    list_changed = anyio.Event()
    changes = 0

    async def on_message(message) -> None:
        nonlocal changes
        seen.append(repr(message))
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            changes += 1
            list_changed.set()

    server = StdioServerParameters(command=target, args=[]) if mode == "stdio" else target
    async with Client(server, message_handler=on_message, cache=None, mode="legacy") as client:
        check(client.protocol_version == "2025-11-25", f"legacy version: {client.protocol_version}")
        # tools/list: sorted, annotated, object schemas, writeOnly kept.
        listed = await client.list_tools()
        seen.append(repr(listed))
        names = [t.name for t in listed.tools]
        check(names == sorted(names), f"sorted: {names}")
        check("pay.send" in names and "admin.stats" not in names, f"names: {names}")
        tools = {t.name: t for t in listed.tools}
        for t in listed.tools:
            check(t.input_schema.get("type") == "object", f"{t.name} inputSchema is an object")
            if t.output_schema is not None:
                check(t.output_schema.get("type") == "object", f"{t.name} outputSchema is an object")
        check(tools["notes.list"].annotations.read_only_hint is True, "notes.list readOnlyHint")
        check(tools["notes.purge"].annotations.destructive_hint is True, "notes.purge destructiveHint")
        check(tools["pay.send"].input_schema["properties"]["card"].get("writeOnly") is True, "card writeOnly")

        # ok
        r = await client.call_tool("notes.add", {"text": "buy milk"})
        seen.append(repr(r))
        check(not r.is_error and r.structured_content == {"result": 1}, f"add: {r}")
        r = await client.call_tool("notes.list", {})
        check(r.structured_content == {"result": ["buy milk"]}, f"list: {r}")

        # invalid input: isError, naming `invalid` and the field
        r = await client.call_tool("notes.add", {"text": 42})
        seen.append(repr(r))
        check(r.is_error is True, f"invalid is an error: {r}")
        # notes.add declares an output schema: an error result carries no
        # structuredContent to break it; the code and issues are in `_meta`.
        check(r.structured_content is None, f"no structuredContent on an error: {r}")
        check(r.meta["toolmark/error"]["code"] == "invalid", f"invalid code: {r}")
        check(r.meta["toolmark/error"]["issues"][0]["path"] == "text", f"invalid path: {r}")
        text = r.content[0].text
        check("invalid" in text and "text" in text, f"invalid text: {text}")

        # consequential, approved by the app's handler; the secret stays out
        r = await client.call_tool("pay.send", {"to": "ada", "amount": 20, "card": SECRET})
        seen.append(repr(r))
        check(not r.is_error and "card ending 9876" in r.structured_content["result"], f"paid: {r}")
        # rejected by the handler
        r = await client.call_tool("pay.send", {"to": "bob", "amount": 500, "card": SECRET})
        seen.append(repr(r))
        check(r.is_error is True and r.meta["toolmark/error"]["code"] == "rejected", f"rejected: {r}")
        check("need a human" in r.content[0].text, f"reason: {r}")
        # invalid input at the sensitive field never quotes it
        r = await client.call_tool("pay.send", {"to": "ada", "amount": "x" + SECRET, "card": SECRET})
        seen.append(repr(r))
        check(r.is_error is True, f"invalid amount: {r}")

        # progress
        progress: list[tuple[float, float | None]] = []

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            progress.append((p, total))

        r = await client.call_tool("slow.count", {"to": 3}, progress_callback=on_progress)
        check(r.structured_content == {"result": 3}, f"count: {r}")
        check(progress == [(1, 3), (2, 3), (3, 3)], f"progress: {progress}")

        # a cancelled long call: progress stops, the server goes on
        long_progress: list[float] = []

        async def on_long(p: float, total: float | None, message: str | None) -> None:
            long_progress.append(p)

        with anyio.move_on_after(0.4):
            await client.call_tool("slow.count", {"to": 1000}, progress_callback=on_long)
            raise AssertionError("the long call finished")
        check(len(long_progress) >= 1, "the long call ran")
        r = await client.call_tool("notes.list", {})
        check(not r.is_error, "server still answers after a cancel")

        # list_changed after a scope is shown, and after it is hidden
        r = await client.call_tool("settings.admin_mode", {"on": True})
        with anyio.fail_after(5):
            await list_changed.wait()
        names = [t.name for t in (await client.list_tools()).tools]
        check("admin.stats" in names, f"admin shown: {names}")
        list_changed = anyio.Event()
        await client.call_tool("settings.admin_mode", {"on": False})
        with anyio.fail_after(5):
            await list_changed.wait()
        names = [t.name for t in (await client.list_tools()).tools]
        check("admin.stats" not in names, f"admin hidden: {names}")

        # unknown tool: the JSON-RPC error (the SDK raises or returns an error)
        try:
            r = await client.call_tool("no.such.tool", {})
            check(r.is_error is True, f"unknown tool: {r}")
        except Exception as e:  # noqa: BLE001 - the SDK's MCPError
            seen.append(repr(e))
            check("Unknown tool" in str(e) or "-32602" in repr(e), f"unknown tool error: {e!r}")

    check(not any(SECRET in m for m in seen), "the secret reached the client")
    print(f"python {mode}: all checks passed ({len(seen)} messages)")


# The Tasks extension (io.modelcontextprotocol/tasks): the SDK has no client for
# it, so the test declares it and speaks tasks/get, tasks/update, tasks/cancel.
class TaskHandle(types.Result):
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class TaskState(types.Result):
    task_id: str = Field(alias="taskId")
    status: str
    status_message: str | None = Field(default=None, alias="statusMessage")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(default=None, alias="inputRequests")


class TaskGet(types.Request[dict[str, Any], Literal["tasks/get"]]):
    name_param = "taskId"


class TaskUpdate(types.Request[dict[str, Any], Literal["tasks/update"]]):
    name_param = "taskId"


class TaskCancel(types.Request[dict[str, Any], Literal["tasks/cancel"]]):
    name_param = "taskId"


class Ack(types.Result):
    pass


async def task_get(session, task_id: str) -> TaskState:
    state = await session.send_request(TaskGet(method="tasks/get", params={"taskId": task_id}), TaskState)
    seen.append(repr(state))
    return state


async def task_until(session, task_id: str, statuses: set[str]) -> TaskState:
    with anyio.fail_after(10):
        while True:
            state = await task_get(session, task_id)
            if state.status in statuses:
                return state
            await anyio.sleep(0.05)


class Tasks(ClientExtension):
    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self) -> None:
        self.created: list[TaskHandle] = []
        self.statuses: list[str] = []

    def claims(self):
        async def resolve(handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
            self.created.append(handle)
            self.statuses.append(handle.status)
            state = await task_until(ctx.session, handle.task_id, {"completed", "failed", "cancelled"})
            self.statuses.append(state.status)
            check(state.status == "completed", f"task ended {state.status}: {state}")
            return types.CallToolResult.model_validate(state.result)

        return [ResultClaim(result_type="task", model=TaskHandle, resolve=resolve)]


async def tasks_2026(mode: str, server) -> None:
    tasks = Tasks()

    async def no_elicitation(ctx, params) -> types.ElicitResult:
        raise AssertionError("a task's confirmation is answered with tasks/update, not a round trip")

    async with Client(
        server, mode="auto", cache=None, extensions=[tasks], elicitation_callback=no_elicitation
    ) as client:
        check(client.protocol_version == "2026-07-28", f"version: {client.protocol_version}")
        # A short call answers its result: no task.
        r = await client.call_tool("notes.add", {"text": "quick"})
        check(not r.is_error and not tasks.created, f"no task for a quick call: {r} {tasks.created}")
        # A long call becomes a task (working), polled to completion.
        r = await client.call_tool("slow.count", {"to": 30})
        seen.append(repr(r))
        check(r.structured_content == {"result": 30}, f"task result: {r}")
        check(tasks.statuses == ["working", "completed"], f"task statuses: {tasks.statuses}")

        session = client.session
        # A cancelled one.
        handle = await session.call_tool("slow.count", {"to": 1000}, allow_claimed=True)
        check(isinstance(handle, TaskHandle) and handle.status == "working", f"long call: {handle}")
        state = await task_get(session, handle.task_id)
        check(state.status == "working", f"working: {state}")
        await session.send_request(TaskCancel(method="tasks/cancel", params={"taskId": handle.task_id}), Ack)
        state = await task_until(session, handle.task_id, {"cancelled", "completed", "failed"})
        check(state.status == "cancelled", f"cancelled: {state}")

        # A call waiting for its client's approval is a task in input_required at once.
        handle = await session.call_tool(
            "pay.send", {"to": "cy", "amount": 9, "card": SECRET}, allow_claimed=True
        )
        seen.append(repr(handle))
        check(isinstance(handle, TaskHandle) and handle.status == "input_required", f"approval task: {handle}")
        state = await task_get(session, handle.task_id)
        asked = state.input_requests["confirm"]["params"]["message"]
        check("Pay 9 EUR to cy" in asked and "[redacted]" in asked, f"asked: {asked}")
        await session.send_request(
            TaskUpdate(
                method="tasks/update",
                params={"taskId": handle.task_id, "inputResponses": {"confirm": {"action": "accept"}}},
            ),
            Ack,
        )
        state = await task_until(session, handle.task_id, {"completed", "failed", "cancelled"})
        check(state.status == "completed", f"approved task: {state}")
        check("paid 9 EUR to cy" in state.result["structuredContent"]["result"], f"approved result: {state}")
        # An unknown task, and one of another caller, are not found.
        try:
            await task_get(session, "0" * 32)
            raise AssertionError("an unknown task was found")
        except Exception as e:  # noqa: BLE001 - the SDK's MCPError
            check("No such task" in str(e), f"unknown task: {e!r}")


def page_request(url: str, body: dict | None = None, user: str | None = None) -> tuple[int, dict]:
    """What the person's browser does on the app's approval page (blocking)."""
    import json
    import urllib.error
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    token = urllib.parse.parse_qs(parts.query)["token"][0]
    api = f"{parts.scheme}://{parts.netloc}/approve/api"
    if body is None:
        req = urllib.request.Request(api + "?token=" + urllib.parse.quote(token))
    else:
        data = json.dumps(dict(body, token=token)).encode()
        req = urllib.request.Request(api, data=data, headers={"Content-Type": "application/json"})
    if user is not None:
        req.add_header("Cookie", f"demo_user={user}")
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


async def page_2026(server: str) -> None:
    """notes.purge is approved by a person on the app's page (URL mode)."""
    urls: list[str] = []
    plan: list[str] = []

    async def elicit(ctx, params) -> types.ElicitResult:
        seen.append(repr(params))
        check(params.mode == "url", f"URL mode: {params}")
        urls.append(params.url)
        step = plan.pop(0)
        if step == "not yet":
            return types.ElicitResult(action="accept")
        status, shown = await anyio.to_thread.run_sync(page_request, params.url)
        check(status == 200 and shown["tool"] == "notes.purge", f"page shows: {status} {shown}")
        check("Delete every note" in shown["summary"] and shown["decided"] is False, f"shown: {shown}")
        status, _ = await anyio.to_thread.run_sync(page_request, params.url, {"approved": True})
        check(status == 401, f"a decision without signing in: {status}")
        approved = step == "approve"
        status, body = await anyio.to_thread.run_sync(
            page_request, params.url, {"approved": approved, "reason": "not today"}, "alice"
        )
        check(status == 200 and body == {"recorded": True}, f"decided: {status} {body}")
        status, _ = await anyio.to_thread.run_sync(page_request, params.url, {"approved": True}, "mallory")
        check(status == 409, f"a second decision: {status}")
        return types.ElicitResult(action="accept")

    async with Client(server, mode="auto", cache=None, elicitation_callback=elicit) as client:
        await client.call_tool("notes.add", {"text": "to purge"})
        # the client says "done" before the person decided: asked again; then approved
        plan.extend(["not yet", "approve"])
        r = await client.call_tool("notes.purge", {})
        seen.append(repr(r))
        check(not r.is_error and r.structured_content["result"] >= 1, f"purged: {r}")
        check(len(urls) == 2, f"asked twice: {urls}")
        # rejected on the page
        plan.append("reject")
        r = await client.call_tool("notes.purge", {})
        check(r.is_error is True and code(r) == "rejected", f"rejected on the page: {r}")
        check("not today" in message(r), f"the page's reason: {r}")
        # the page itself is the app's
        import urllib.request

        page = urls[0].split("?")[0]
        with urllib.request.urlopen(page) as resp:
            check(resp.status == 200 and b"Approve a call" in resp.read(), "the example's page")


def flip(state: str) -> str:
    """The same handle with one hex digit changed."""
    last = state[-1]
    return state[:-1] + ("1" if last == "0" else "0")


async def main_2026(mode: str, target: str) -> None:
    answers: list[types.ElicitResult] = []
    asked: list[str] = []

    async def elicit(ctx, params) -> types.ElicitResult:
        seen.append(repr(params))
        asked.append(params.message)
        return answers.pop(0)

    async def on_message(message) -> None:
        seen.append(repr(message))

    args = ["--confirm-by-elicitation", "--confirm-expiry-ms", "1500"]
    server = StdioServerParameters(command=target, args=args) if mode == "stdio" else target
    async with Client(
        server, mode="auto", cache=None, elicitation_callback=elicit, message_handler=on_message
    ) as client:
        # server/discover: the 2026-07-28 revision, no session
        check(client.protocol_version == "2026-07-28", f"version: {client.protocol_version}")
        discovered = client.session.discover_result
        check(discovered is not None and "2026-07-28" in discovered.supported_versions, f"discover: {discovered}")
        check("2025-11-25" in discovered.supported_versions, f"both revisions: {discovered}")
        check(client.server_capabilities.tools is not None, "tools capability")

        # tools/list with the cache hints
        listed = await client.list_tools()
        seen.append(repr(listed))
        check(listed.ttl_ms == 60000, f"ttlMs: {listed.ttl_ms}")
        check(listed.cache_scope == "private", f"cacheScope: {listed.cache_scope}")
        names = [t.name for t in listed.tools]
        check(names == sorted(names) and "pay.send" in names and "admin.stats" not in names, f"names: {names}")

        # ok, invalid
        r = await client.call_tool("notes.add", {"text": "buy milk"})
        check(not r.is_error and r.structured_content == {"result": 1}, f"add: {r}")
        r = await client.call_tool("notes.add", {"text": 42})
        seen.append(repr(r))
        check(r.is_error is True and code(r) == "invalid", f"invalid: {r}")

        # MRTR: approve (the SDK answers the elicitation and retries)
        answers.append(types.ElicitResult(action="accept"))
        r = await client.call_tool("pay.send", {"to": "ada", "amount": 20, "card": SECRET})
        seen.append(repr(r))
        check(not r.is_error and "paid 20 EUR to ada" in r.structured_content["result"], f"approved: {r}")
        check("Pay 20 EUR to ada" in asked[-1] and "[redacted]" in asked[-1], f"asked: {asked[-1]}")
        # reject
        answers.append(types.ElicitResult(action="decline"))
        r = await client.call_tool("pay.send", {"to": "ada", "amount": 30, "card": SECRET})
        seen.append(repr(r))
        check(r.is_error is True and code(r) == "rejected", f"rejected: {r}")
        # edit: the form carries the plain fields; the card keeps its real value
        answers.append(types.ElicitResult(action="accept", content={"amount": 7}))
        r = await client.call_tool("pay.send", {"to": "ada", "amount": 70, "card": SECRET})
        seen.append(repr(r))
        check(not r.is_error and "paid 7 EUR" in r.structured_content["result"], f"edited: {r}")
        check("9876" in r.structured_content["result"], f"the real card was used: {r}")

        # driving the rounds by hand
        pay = {"to": "bob", "amount": 5, "card": SECRET}
        accept = {"confirm": types.ElicitResult(action="accept")}

        async def first() -> types.InputRequiredResult:
            ir = await client.session.call_tool("pay.send", pay, allow_input_required=True)
            seen.append(repr(ir))
            check(isinstance(ir, types.InputRequiredResult), f"input_required: {ir}")
            check(SECRET not in (ir.request_state or ""), "no secret in requestState")
            return ir

        ir = await first()
        # a retry without an answer is asked again, and nothing runs
        again = await client.session.call_tool(
            "pay.send", pay, request_state=ir.request_state, allow_input_required=True
        )
        check(isinstance(again, types.InputRequiredResult), f"re-asked: {again}")
        # tampered, or other arguments: the JSON-RPC error -32602 (a requestState
        # that fails its integrity check), Toolmark's `invalid` refusal as its data
        for what, args, state in [
            ("tampered", pay, flip(ir.request_state)),
            ("other arguments", dict(pay, to="eve"), ir.request_state),
        ]:
            try:
                r = await client.session.call_tool(
                    "pay.send", args, request_state=state, input_responses=accept, allow_input_required=True
                )
                check(False, f"{what}: expected the JSON-RPC error -32602, got {r}")
            except MCPError as e:
                seen.append(repr(e))
                check(
                    e.code == -32602 and (e.data or {}).get("code") == "invalid",
                    f"{what}: {e.code} {e.data}",
                )
        # approved once ...
        r = await client.session.call_tool(
            "pay.send", pay, request_state=ir.request_state, input_responses=accept, allow_input_required=True
        )
        seen.append(repr(r))
        check(not r.is_error and "paid 5 EUR to bob" in r.structured_content["result"], f"approved by hand: {r}")
        # ... and a replay runs nothing
        r = await client.session.call_tool(
            "pay.send", pay, request_state=ir.request_state, input_responses=accept, allow_input_required=True
        )
        check(r.is_error is True and code(r) == "confirmation_expired", f"replayed: {r}")
        # expired (the server's confirmations wait 1.5 s)
        ir = await first()
        await anyio.sleep(1.7)
        r = await client.session.call_tool(
            "pay.send", pay, request_state=ir.request_state, input_responses=accept, allow_input_required=True
        )
        check(r.is_error is True and code(r) == "confirmation_expired", f"expired: {r}")

        # subscriptions/listen: tools/list_changed when a scope is shown and hidden
        async with client.listen(tools_list_changed=True) as sub:
            check(sub.honored is not None and sub.honored.tools_list_changed, f"honored: {sub.honored}")
            await client.call_tool("settings.admin_mode", {"on": True})
            with anyio.fail_after(5):
                async for _event in sub:
                    break
            names = [t.name for t in (await client.list_tools()).tools]
            check("admin.stats" in names, f"admin shown: {names}")
            await client.call_tool("settings.admin_mode", {"on": False})
            with anyio.fail_after(5):
                async for _event in sub:
                    break
            names = [t.name for t in (await client.list_tools()).tools]
            check("admin.stats" not in names, f"admin hidden: {names}")

    await tasks_2026(mode, server)
    if mode == "http":
        await page_2026(server)

    check(not any(SECRET in m for m in seen), "the secret reached the client")
    print(f"python {mode} 2026-07-28: all checks passed ({len(seen)} messages)")


if __name__ == "__main__":
    revision = sys.argv[3] if len(sys.argv) > 3 else "legacy"
    try:
        anyio.run(main_2026 if revision == "2026" else main, sys.argv[1], sys.argv[2])
    except AssertionError as e:
        print(f"python {sys.argv[1]}: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
