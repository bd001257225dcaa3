"""Validate what Toolmark's agent adapter generates with the official SDKs' types.

Usage: python sdk_check.py generated.json

The file holds, per provider: "tools" (each tool list Toolmark generated),
"results" (the messages to append after a scripted response), "bridge" (the
message for a decision), "response" (the scripted model response Toolmark read).
Each value is validated with the SDK's own typed models (pydantic TypeAdapter over
the request param types, model_validate for responses). TypedDict params ignore
unknown keys, so each validated value must also equal its input: a misspelled or
unknown key anywhere fails. Exits non-zero, naming the value, on any rejection.
"""

import json
import sys

from pydantic import TypeAdapter

import anthropic.types as anthropic_types
import openai.types.chat as chat
import openai.types.responses as responses
from google.genai import types as genai


def materialize(x):
    """Validated values with Iterable fields hold lazy validators: run them."""
    if isinstance(x, dict):
        return {k: materialize(v) for k, v in x.items()}
    if isinstance(x, (str, bytes, int, float, bool)) or x is None:
        return x
    if hasattr(x, "__iter__"):
        return [materialize(i) for i in x]
    return x


def exact(adapter, value, what):
    validated = materialize(adapter.validate_python(value))
    if validated != value:
        raise AssertionError(f"{what}: the SDK type drops or changes keys:\n"
                             f"  sent:      {json.dumps(value)}\n"
                             f"  validated: {json.dumps(validated, default=str)}")


def check_openai_chat(d):
    tool = TypeAdapter(chat.ChatCompletionToolParam)
    for list_name, tools in d["tools"].items():
        for t in tools:
            exact(tool, t, f"openai_chat {list_name} tool {t['function']['name']}")
    message = TypeAdapter(chat.ChatCompletionMessageParam)
    for m in d["results"]:
        exact(TypeAdapter(chat.ChatCompletionToolMessageParam), m, "openai_chat result")
        exact(message, m, "openai_chat result as a message")
    exact(TypeAdapter(chat.ChatCompletionUserMessageParam), d["bridge"], "openai_chat bridge")
    completion = chat.ChatCompletion.model_validate(d["response"])
    calls = completion.choices[0].message.tool_calls
    assert len(calls) == d["calls"], f"openai_chat: {len(calls)} calls parsed"
    assert [c.id for c in calls] == [m["tool_call_id"] for m in d["results"]]


def check_openai_responses(d):
    tool = TypeAdapter(responses.FunctionToolParam)
    any_tool = TypeAdapter(responses.ToolParam)
    for list_name, tools in d["tools"].items():
        for t in tools:
            exact(tool, t, f"openai_responses {list_name} tool {t['name']}")
            exact(any_tool, t, f"openai_responses {list_name} tool {t['name']} as a ToolParam")
    item = TypeAdapter(responses.ResponseInputItemParam)
    for m in d["results"]:
        exact(item, m, "openai_responses result")
    exact(TypeAdapter(responses.EasyInputMessageParam), d["bridge"], "openai_responses bridge")
    exact(item, d["bridge"], "openai_responses bridge as an input item")
    exact(TypeAdapter(responses.ResponseInputParam), d["results"] + [d["bridge"]],
          "openai_responses input list")
    resp = responses.Response.model_validate(d["response"])
    calls = [o for o in resp.output if o.type == "function_call"]
    assert len(calls) == d["calls"], f"openai_responses: {len(calls)} calls parsed"
    assert [c.call_id for c in calls] == [m["call_id"] for m in d["results"]]


def check_anthropic(d):
    tool = TypeAdapter(anthropic_types.ToolParam)
    for list_name, tools in d["tools"].items():
        for t in tools:
            exact(tool, t, f"anthropic {list_name} tool {t['name']}")
    message = TypeAdapter(anthropic_types.MessageParam)
    for m in d["results"]:
        exact(message, m, "anthropic result message")
        for block in m["content"]:
            exact(TypeAdapter(anthropic_types.ToolResultBlockParam), block, "anthropic tool_result")
    exact(message, d["bridge"], "anthropic bridge")
    msg = anthropic_types.Message.model_validate(d["response"])
    uses = [b for b in msg.content if b.type == "tool_use"]
    assert len(uses) == d["calls"], f"anthropic: {len(uses)} tool_use blocks parsed"
    assert [u.id for u in uses] == [b["tool_use_id"] for b in d["results"][0]["content"]]


def check_gemini(d):
    for list_name, tools in d["tools"].items():
        for t in tools:
            parsed = genai.Tool.model_validate(t)
            decls = parsed.function_declarations or []
            assert len(decls) == len(t["functionDeclarations"]), f"gemini {list_name}"
            for decl, sent in zip(decls, t["functionDeclarations"]):
                assert decl.name == sent["name"]
                assert decl.parameters_json_schema == sent["parametersJsonSchema"], decl.name
    for m in d["results"]:
        content = genai.Content.model_validate(m)
        assert len(content.parts) == d["calls"]
        for part, sent in zip(content.parts, m["parts"]):
            assert part.function_response is not None
            assert part.function_response.response == sent["functionResponse"]["response"]
    bridge = genai.Content.model_validate(d["bridge"])
    assert bridge.parts[0].text == d["bridge"]["parts"][0]["text"]
    resp = genai.GenerateContentResponse.model_validate(d["response"])
    calls = resp.function_calls or []
    assert len(calls) == d["calls"], f"gemini: {len(calls)} function calls parsed"


CHECKS = {
    "openai_chat": check_openai_chat,
    "openai_responses": check_openai_responses,
    "anthropic": check_anthropic,
    "gemini": check_gemini,
}


def main():
    with open(sys.argv[1]) as f:
        generated = json.load(f)
    for provider, data in generated.items():
        CHECKS[provider](data)
        print(f"{provider}: ok")
    missing = set(CHECKS) - set(generated)
    if missing:
        raise SystemExit(f"not generated: {sorted(missing)}")


if __name__ == "__main__":
    main()
