"""Tasks whose tools ask their client (MCP 2026-07-28, the Tasks extension),
driven by the official MCP Python SDK (mcp==2.3.0) against examples/mcp_conformance
over HTTP.

Usage: python_tasks_2026.py <url, e.g. http://127.0.0.1:PORT/mcp>

- `multi_input` works, then asks two questions at once: the task is
  input_required with both in inputRequests; tasks/update answers one, the other
  stays (and only it); the second answer completes the task with both answers.
- `test_tool_with_task` asks before it is a task: the SDK answers the
  input_required round with its elicitation_callback; the retry is a task whose
  result has the answer.
- `protocol_error_job` panics: its task is failed with a JSON-RPC error and no
  result; `failing_job` returns its error: a completed task with isError.
- `failing_job` (task support `required`) called by a client without the
  extension is the JSON-RPC error -32021 naming the extension.

The SDK has no client for the Tasks extension: the test declares it and speaks
tasks/get and tasks/update. Exits 0 when every check passed. Run by
tests/mcp/tasks_python.rs.
"""

import sys
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from pydantic import Field

TASKS = "io.modelcontextprotocol/tasks"


def check(ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(what)


def text(r) -> str:
    return " ".join(c.text for c in r.content if getattr(c, "type", "") == "text")


class TaskHandle(types.Result):
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class TaskState(types.Result):
    task_id: str = Field(alias="taskId")
    status: str
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(default=None, alias="inputRequests")


class TaskGet(types.Request[dict[str, Any], Literal["tasks/get"]]):
    name_param = "taskId"


class TaskUpdate(types.Request[dict[str, Any], Literal["tasks/update"]]):
    name_param = "taskId"


class Ack(types.Result):
    pass


async def task_get(session, task_id: str) -> TaskState:
    return await session.send_request(TaskGet(method="tasks/get", params={"taskId": task_id}), TaskState)


async def task_until(session, task_id: str, done) -> TaskState:
    with anyio.fail_after(15):
        while True:
            state = await task_get(session, task_id)
            if done(state):
                return state
            await anyio.sleep(0.05)


def terminal(s: TaskState) -> bool:
    return s.status in ("completed", "failed", "cancelled")


async def update(session, task_id: str, responses: dict[str, Any]) -> None:
    await session.send_request(
        TaskUpdate(method="tasks/update", params={"taskId": task_id, "inputResponses": responses}),
        Ack,
    )


class Tasks(ClientExtension):
    identifier = TASKS

    def claims(self):
        async def resolve(handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
            state = await task_until(ctx.session, handle.task_id, terminal)
            check(state.status == "completed", f"task ended {state.status}: {state}")
            return types.CallToolResult.model_validate(state.result)

        return [ResultClaim(result_type="task", model=TaskHandle, resolve=resolve)]


async def main(url: str) -> None:
    asked: list[str] = []

    async def elicit(ctx, params) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Alice"})

    async with Client(
        url, mode="auto", cache=None, extensions=[Tasks()], elicitation_callback=elicit
    ) as client:
        check(client.protocol_version == "2026-07-28", f"negotiated {client.protocol_version}")
        session = client.session

        # Two questions at once inside a task, answered one at a time.
        handle = await session.call_tool("multi_input", {}, allow_claimed=True)
        check(isinstance(handle, TaskHandle), f"multi_input is a task: {handle}")
        state = await task_until(
            session, handle.task_id, lambda s: len(s.input_requests or {}) == 2 or terminal(s)
        )
        check(state.status == "input_required", f"asking: {state}")
        first, second = sorted(state.input_requests)
        for key in (first, second):
            check(state.input_requests[key]["method"] == "elicitation/create", f"request: {state}")
        await update(session, handle.task_id, {first: {"action": "accept", "content": {"name": "ada"}}})
        state = await task_get(session, handle.task_id)
        check(state.status == "input_required", f"still asking: {state}")
        check(list(state.input_requests) == [second], f"only the other question: {state}")
        await update(session, handle.task_id, {second: {"action": "accept", "content": {"name": "bo"}}})
        state = await task_until(session, handle.task_id, terminal)
        check(state.status == "completed", f"answered: {state}")
        check(state.result["content"][0]["text"] == "ada and bo", f"result: {state}")
        check(asked == [], f"a task's questions are not round trips: {asked}")

        # A round before the task (answered by the SDK), then the task.
        r = await client.call_tool("test_tool_with_task", {})
        check(not r.is_error and text(r) == "Hello, Alice!", f"round then task: {r}")
        check(asked == ["What is your name?"], f"asked: {asked}")

        # A panic fails the task; a tool's error completes it with isError.
        handle = await session.call_tool("protocol_error_job", {}, allow_claimed=True)
        check(isinstance(handle, TaskHandle), f"protocol_error_job is a task: {handle}")
        state = await task_until(session, handle.task_id, terminal)
        check(state.status == "failed", f"panic: {state}")
        check(isinstance(state.error.get("code"), int) and state.result is None, f"failed: {state}")
        check("panics, as it always does" not in repr(state), f"the panic's message: {state}")
        handle = await session.call_tool("failing_job", {}, allow_claimed=True)
        check(isinstance(handle, TaskHandle), f"failing_job is a task: {handle}")
        state = await task_until(session, handle.task_id, terminal)
        check(state.status == "completed" and state.result["isError"] is True, f"tool error: {state}")

    # A required tool, without the extension: -32021 naming it.
    async with Client(url, mode="auto", cache=None) as client:
        try:
            r = await client.call_tool("failing_job", {})
            check(False, f"expected -32021, got {r}")
        except MCPError as e:
            check(e.code == -32021, f"code: {e.code} {e.message}")
            required = (e.data or {}).get("requiredCapabilities", {})
            check(TASKS in required.get("extensions", {}), f"data: {e.data}")

    print("python tasks 2026: all checks passed")


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1])
    except AssertionError as e:
        print(f"python tasks 2026: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
