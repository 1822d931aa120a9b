"""An agent written without harness: the OpenAI SDK's chat completions with one tool."""

import json

from openai import OpenAI

TOOLS = [{"type": "function", "function": {"name": "multiply", "description": "Multiply two whole numbers.",
          "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}}]


def ask(question: str, base_url: str) -> str:
    client = OpenAI(base_url=base_url, api_key="sk-none", max_retries=0)
    messages = [{"role": "user", "content": question}]
    for step in range(3):
        choice = {"type": "function", "function": {"name": "multiply"}} if step == 0 else "none"
        reply = client.chat.completions.create(model="qwen", messages=messages, tools=TOOLS, tool_choice=choice, temperature=0, max_tokens=48)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append({"role": "assistant", "content": message.content or "", "tool_calls": [c.model_dump() for c in message.tool_calls]})
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": str(args["a"] * args["b"])})
    return ""
