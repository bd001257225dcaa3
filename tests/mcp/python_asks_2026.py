"""A tool asking its client on MCP 2026-07-28, driven by the official MCP Python SDK
(mcp==2.3.0) against examples/mcp_conformance over HTTP.

Usage: python_asks_2026.py <url, e.g. http://127.0.0.1:PORT/mcp>

- `ctx.sample` is an input_required round the SDK answers with its
  sampling_callback; the tool gets the model's text.
- Two `ctx.elicit` in a row are two rounds the SDK answers with its
  elicitation_callback.
- A consequential tool whose confirmation is a round and that, once approved,
  asks a question of its own: the question fails at once (`not_supported`),
  the confirmation was the only thing asked, the call answers.
- A tool that fails for want of sampling, called by a client that declared no
  sampling, is the JSON-RPC error -32021 naming `sampling`.

Exits 0 when every check passed; prints the failing check otherwise. Run by
tests/mcp/python_2026.rs.
"""

import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError


def check(ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(what)


def text(r) -> str:
    return " ".join(c.text for c in r.content if getattr(c, "type", "") == "text")


async def main(url: str) -> None:
    prompts: list[str] = []

    async def sample(ctx, params) -> types.CreateMessageResult:
        prompts.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Paris"),
            model="python-test-model",
        )

    asked: list[str] = []

    async def elicit(ctx, params) -> types.ElicitResult:
        asked.append(params.message)
        fields = list(params.requested_schema.get("properties", {}))
        if not fields:
            # A confirmation (approve or reject): nothing to fill in.
            return types.ElicitResult(action="accept", content={})
        return types.ElicitResult(action="accept", content={fields[0]: f"answer-{len(asked)}"})

    async with Client(
        url, mode="auto", cache=None, sampling_callback=sample, elicitation_callback=elicit
    ) as client:
        check(client.protocol_version == "2026-07-28", f"negotiated {client.protocol_version}")
        r = await client.call_tool("test_input_required_result_sampling", {})
        check(not r.is_error and text(r) == "Paris", f"sampled: {r}")
        check(prompts == ["What is the capital of France?"], f"prompts: {prompts}")
        r = await client.call_tool("test_input_required_result_multi_round", {})
        check(not r.is_error, f"two rounds: {r}")
        check("answer-1" in text(r) and "answer-2" in text(r), f"both answers: {r}")
        check(
            asked == ["Step 1: What is your name?", "Step 2: What is your favorite color?"],
            f"asked: {asked}",
        )
        # A consequential tool confirmed by a round that, once approved, asks
        # its own question: the question is not asked (not_supported, at once),
        # the confirmation was asked once, the call answers (no hang).
        asked.clear()
        with anyio.fail_after(30):
            r = await client.call_tool("test_confirm_then_ask", {})
        check(not r.is_error and text(r) == "asked nothing: not_supported", f"confirmed: {r}")
        check(
            len(asked) == 1 and asked[0].startswith("Allow `test_confirm_then_ask`?"),
            f"asked: {asked}",
        )

    async with Client(url, mode="auto", cache=None) as client:
        try:
            r = await client.call_tool("test_missing_capability", {})
            check(False, f"expected -32021, got {r}")
        except MCPError as e:
            check(e.code == -32021, f"code: {e.code} {e.message}")
            check("sampling" in (e.data or {}).get("requiredCapabilities", {}), f"data: {e.data}")

    print("python asks 2026: all checks passed")


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1])
    except AssertionError as e:
        print(f"python asks 2026: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
