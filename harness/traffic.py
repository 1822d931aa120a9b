"""An agent's model traffic as runs: which calls belong together, and who wrote each byte.

A call whose prompt extends a run's last prompt continues that run; any other starts one,
so concurrent runs stay apart. The first prompt is `developer`, each completion `model`,
what the agent's next prompt adds after it `code`. Where that prompt does not hold the
completion verbatim (a framework rewrote the model's words), the REWRITTEN line and what
the agent sent instead follow the model's words. A chat call's messages are one text
(`chat_text`), its assistant's replies `model` (the inverse of harness.backends.messages).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.errors import HarnessError, TranscriptFormatError
from harness.transcript import Author, Transcript

REWRITTEN = "\n⚠ harness proxy: the agent did not send back the model's words above as written; it sent instead:\n"


@dataclass(frozen=True)
class Call:
    """One model call as the proxy saw it."""

    prompt: str  # what the agent sent, as one text (chat: `chat_text`)
    completion: str  # what the model answered, as text (chat: `body` of its message)
    endpoint: str = "completions"  # or "chat"
    params: dict[str, Any] = field(default_factory=dict)  # the request's other settings (model, stop, ...)
    tool_calls: tuple[dict[str, Any], ...] = ()  # a chat answer's tool calls, as the server gave them
    finish_reason: str = "stop"
    tokens: dict[str, int | None] | None = None
    error: str = ""  # the upstream failed: its message (no completion)

    def key(self) -> str:  # what a replayed request must match
        return json.dumps([self.endpoint, self.prompt, self.params], sort_keys=True, ensure_ascii=False)


def group(calls: Sequence[Call]) -> list[list[Call]]:
    """The calls, in the order they ended, as runs; a retry of a failed call takes its place."""
    runs: list[list[Call]] = []
    for call in calls:
        retried = [run for run in runs if run[-1].error and run[-1].prompt == call.prompt and run[-1].endpoint == call.endpoint]
        if retried:
            retried[0][-1] = call
            continue
        extends = [run for run in runs if _continues(run[-1], call)]
        if extends:  # the run whose buffer it holds the most of
            max(extends, key=lambda run: (call.prompt.startswith(run[-1].prompt + run[-1].completion), len(run[-1].prompt))).append(call)
        else:
            runs.append([call])
    return runs


def _continues(last: Call, call: Call) -> bool:
    return not last.error and last.endpoint == call.endpoint and len(call.prompt) > len(last.prompt) and call.prompt.startswith(last.prompt)


def transcript(run: Sequence[Call]) -> tuple[Transcript, list[bool]]:
    """A run's transcript, and for each call whether the agent sent its completion back rewritten."""
    buffer, rewritten = Transcript(), []
    for i, call in enumerate(run):
        if i == 0:
            buffer.append(Author.DEVELOPER, call.prompt)
        else:
            held = run[i - 1].prompt + run[i - 1].completion
            verbatim = call.prompt.startswith(held)
            rewritten.append(not verbatim)
            added = call.prompt[len(held) :] if verbatim else REWRITTEN + call.prompt[len(run[i - 1].prompt) :]
            buffer.append(Author.CODE, added)  # an empty one still parts two model turns
        if not call.error:
            buffer.append(Author.MODEL, call.completion)
    return buffer, [*rewritten, False]


def prompts(buffer: Transcript, rewritten: Sequence[bool], where: str) -> list[str]:
    """What each call of a saved run was sent: the inverse of `transcript` (a bad mark: TranscriptFormatError)."""
    out, sent, drop = [], [], False
    for span in buffer.spans:
        if span.author is Author.MODEL:
            out.append("".join(sent))
            drop = rewritten[len(out) - 1] if len(out) <= len(rewritten) else False
            if not drop:
                sent.append(span.text)
            continue
        text = span.text
        if drop:
            if not text.startswith(REWRITTEN):
                raise TranscriptFormatError(where, f"call {len(out)} is marked rewritten, but the text after its model turn does not begin with the mark")
            text, drop = text[len(REWRITTEN) :], False
        sent.append(text)
    return out if len(out) == len(rewritten) else out + ["".join(sent)]


# --- chat messages as one text ----------------------------------------------------------


def chat_text(messages: Any, tools: Any = None) -> str:
    """A chat request as one text: `[tools]`, then each message under its `[role]` line, then `[assistant]`."""
    if not isinstance(messages, list) or not messages:
        raise HarnessError("messages", "must be a non-empty list of messages")
    out = []
    if tools:
        if not isinstance(tools, list):
            raise HarnessError("tools", "must be a list")
        out.append("[tools]\n" + "".join(json.dumps(tool, ensure_ascii=False, sort_keys=True) + "\n" for tool in tools))
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise HarnessError(f"messages[{i}]", "must be an object with a role")
        answers = message.get("tool_call_id")
        out.append(f"[{message['role']}{' ' + str(answers) if answers else ''}]\n{body(message, f'messages[{i}]')}\n")
    return "".join(out) + "[assistant]\n"


def body(message: dict[str, Any], where: str = "message") -> str:
    """A message's text: its content, then each tool call as `[call ID] name(arguments)`."""
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") if isinstance(p, dict) and isinstance(p.get("text", ""), str) else f"[{_kind(p)}]" for p in content)
    elif content is not None and not isinstance(content, str):
        raise HarnessError(f"{where}.content", "must be text, a list of parts, or null")
    text = content or ""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise HarnessError(f"{where}.tool_calls", "must be a list")
    for j, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not all(isinstance(function.get(k, ""), str) for k in ("name", "arguments")):
            raise HarnessError(f"{where}.tool_calls[{j}]", "must be an object with a function's name and arguments")
        text += f"{chr(10) if text else ''}[call {call.get('id', '')}] {function.get('name', '')}({function.get('arguments', '')})"
    return text


def _kind(part: Any) -> str:
    return str(part.get("type", "part")) if isinstance(part, dict) else "part"
