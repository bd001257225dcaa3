"""Drive examples/mcp_server with the official MCP Python SDK (mcp==2.3.0).

Usage: python_client.py stdio <path to mcp_server>
       python_client.py http <url, e.g. http://127.0.0.1:PORT/mcp>

Exits 0 when every check passed; prints the failing check otherwise. Run by
tests/mcp/python.rs.
"""

import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

SECRET = "4111-2222-3333-9876"
seen: list[str] = []  # every message the client got, as text


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


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
    async with Client(server, message_handler=on_message, cache=None) as client:
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


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1], sys.argv[2])
    except AssertionError as e:
        print(f"python {sys.argv[1]}: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
