"""Memory per live MCP session (2025-11-25), as BENCHMARKS.md reports it.

Starts `examples/mcp_many` (the binary given) on loopback, opens N sessions with
`initialize` and never closes them (a client that went away), and prints the
server's resident memory before and after, and the difference per session.
Then one more `initialize` beyond the cap shows the 503.

Usage: session_memory.py <path to mcp_many> <N> [<cap>]
"""

import re
import subprocess
import sys
import time

import http.client
import json
from urllib.parse import urlparse

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "session-memory", "version": "0"},
    },
}


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def main(binary: str, n: int, cap: int) -> None:
    server = subprocess.Popen(
        [binary, "--tools", "20", "--http", "127.0.0.1:0", "--max-sessions", str(cap)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = None
        while url is None:
            line = server.stderr.readline()
            if line.startswith("listening on "):
                url = line.split()[-1]
        u = urlparse(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

        def post():
            conn.request("POST", u.path, body=json.dumps(INIT), headers=headers)
            r = conn.getresponse()
            r.read()
            return r

        # Warm up: the first sessions pay for thread stacks and allocator arenas.
        for _ in range(20):
            r = post()
            conn.request("DELETE", u.path, headers={"mcp-session-id": r.getheader("mcp-session-id")})
            conn.getresponse().read()
        time.sleep(1)
        before = rss_kib(server.pid)
        for i in range(n):
            r = post()
            assert r.status == 200, (i, r.status)
        time.sleep(1)
        after = rss_kib(server.pid)
        print(f"{n} sessions: RSS {before} KiB -> {after} KiB, {(after - before) / n:.1f} KiB per session")
        if cap <= n + 20:
            r = post()
            print(f"one more initialize at the cap of {cap}: {r.status}, Retry-After {r.getheader('retry-after')}")
    finally:
        server.kill()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 100000)
