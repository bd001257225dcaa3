"""A bounded loopback load on an MCP server with the official Python SDK
(mcp==2.3.0): N concurrent 2025-11-25 sessions ("legacy" mode, so each one is a
session), each making CALLS tools/call requests and closing.

Usage: python_load.py <url> <N> <CALLS>

Prints "sessions N, calls N*CALLS, errors 0" and exits 0 when every call
succeeded; exits 1 otherwise. Run by tests/mcp/load.rs.
"""

import sys

import anyio
from mcp import Client

errors: list[str] = []
calls = 0


async def one(url: str, i: int, n_calls: int) -> None:
    global calls
    try:
        async with Client(url, mode="legacy", cache=None) as client:
            for k in range(n_calls):
                r = await client.call_tool("bulk.tool_00001", {"a": i, "b": k})
                if r.is_error or r.structured_content != {"sum": i + k}:
                    errors.append(f"session {i} call {k}: {r}")
                else:
                    calls += 1
    except Exception as e:  # noqa: BLE001 - any failure is counted
        errors.append(f"session {i}: {e!r}")


async def main(url: str, n: int, n_calls: int) -> None:
    with anyio.fail_after(300):
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, url, i, n_calls)
    print(f"sessions {n}, calls {calls}, errors {len(errors)}")
    for e in errors[:10]:
        print(f"- {e}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    sys.exit(1 if errors else 0)
