"""The wire format of OpenAI-compatible servers, checked where it is read.

    data: {"choices": [{"text": "Thought:", "finish_reason": null}]}                 /completions
    data: {"choices": [{"delta": {"content": "Thought:"}, "finish_reason": null}]}   /chat/completions
    data: {"choices": [], "usage": {"prompt_tokens": 412, "completion_tokens": 31}}
    data: [DONE]

A field of another shape is a ModelError naming it; a bad token count is dropped with a note.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import chain
from typing import Any

from harness.entry import Entry
from harness.model import ModelError, TokenUsage

MAX_COUNT = 10**12


def data_lines(chunks: Iterator[bytes], max_line: int) -> Iterator[str]:
    """The `data:` payloads of a server-sent event stream, as UTF-8 (bad bytes: U+FFFD)."""
    pending = bytearray()
    for chunk in chain(chunks, [b"\n"]):  # the stream's end ends its last line
        pending += chunk
        if b"\n" in chunk:
            *lines, rest = pending.split(b"\n")
            pending = bytearray(rest)
            for line in lines:
                if line.startswith(b"data:"):
                    yield line[5:].decode("utf-8", "replace").strip()
        if len(pending) > max_line:
            raise ModelError(f"the server sent a line longer than {max_line:,} bytes; the call was stopped")


def kind(value: Any) -> str:
    """What a JSON value is, for a message: 'a number (42)', 'a list', 'null'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def parse_event(data: str, entry: Entry) -> dict[str, Any]:
    """One event's (or a whole answer's) JSON object."""
    try:
        event = json.loads(data)
    except (ValueError, RecursionError):
        raise ModelError(f"the server sent an event that is not JSON: {entry.detail(data)!r}; is the base URL an OpenAI-compatible server?") from None
    if not isinstance(event, dict):
        raise ModelError(f"the server sent an event that is {kind(event)}, not a JSON object")
    return event


def piece(data: str, chat: bool, entry: Entry) -> tuple[str, bool, Any, bool]:
    """One event's JSON, every field checked: its completion text ("" for none), whether a choice
    said why it ended, its raw `usage` value (or None), and whether it had a `choices` list."""
    event = parse_event(data, entry)
    if "error" in event:
        raise ModelError(f"the server reported an error mid-stream: {error_text(event['error'], entry)}")
    choices = event.get("choices")
    if choices is None:
        return "", False, event.get("usage"), False
    texts, finished = [], False
    for i, choice in enumerate(_shaped(choices, "choices", list, "a list")):
        if not isinstance(choice, dict):
            raise ModelError(f"the server's event is malformed: choices[{i}] is {kind(choice)}, not an object")
        if chat:
            delta = _shaped(choice.get("delta"), f"choices[{i}].delta", dict, "an object") or {}
            value = _shaped(delta.get("content"), f"choices[{i}].delta.content", str, "a string")
        else:
            value = _shaped(choice.get("text"), f"choices[{i}].text", str, "a string")
        reason = _shaped(choice.get("finish_reason"), f"choices[{i}].finish_reason", str, "a string")
        texts.append(value or "")
        finished = finished or reason is not None
    return "".join(texts), finished, event.get("usage"), True


def _shaped(value: Any, field: str, shape: type, said: str) -> Any:
    """`value` if it is null or of `shape`; a ModelError naming `field` if not."""
    if value is not None and not isinstance(value, shape):
        raise ModelError(f"the server's event is malformed: {field} is {kind(value)}, not {said}")
    return value


def usage(value: Any, notes: dict[str, None]) -> TokenUsage | None:
    """The server's token counts, each checked; a bad one is dropped and noted (`notes`: each once)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        notes[f"the server's usage is {kind(value)}, not an object: its token counts were dropped"] = None
        return None

    def count(name: str, where: dict[str, Any], field: str) -> int | None:
        n = where.get(name)
        if n is None:
            return None
        if type(n) is not int or not 0 <= n <= MAX_COUNT:
            notes[f"the server's {field} is {kind(n)}, not a whole number from 0: it was dropped"] = None
            return None
        return n

    prompt = count("prompt_tokens", value, "usage.prompt_tokens")
    if prompt is None:
        return None
    completion = count("completion_tokens", value, "usage.completion_tokens")
    details, cached = value.get("prompt_tokens_details"), None
    if isinstance(details, dict):
        cached = count("cached_tokens", details, "usage.prompt_tokens_details.cached_tokens")
    elif details is not None:
        notes[f"the server's usage.prompt_tokens_details is {kind(details)}, not an object: it was dropped"] = None
    evaluated = prompt - cached if cached is not None and cached <= prompt else None
    return TokenUsage(prompt, evaluated, completion)


def error_text(error: bytes | Any, entry: Entry) -> str:
    """The message of an error answer's body (bytes) or an error value: OpenAI's {"error":
    {"message"}}, FastAPI's {"detail"}, or all of it."""
    if isinstance(error, bytes):
        try:
            error = json.loads(error.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            return entry.detail(error.decode("utf-8", "replace"))
    if isinstance(error, dict):
        error = error.get("error", error.get("detail", error))
    if isinstance(error, dict):
        error = error.get("message", json.dumps(error, ensure_ascii=False))
    return entry.detail(error)
