"""What happened during a run, in order. The loop emits these; renderers only read them.

A live view prints them as they arrive (`harness run --format events`: one JSON object a
line); a saved transcript is what the Appended events built up. Every event is a
NamedTuple: an immutable value, cheap to make, matched by its class (`case Notice(...)`).

Why a run stops (StopReason; each shipped scenario named shows one):

    final_answer         the model wrote `Final Answer:` (or `Finish[...]`, or called finish)
    max_steps            the step limit came first (default 15 model calls)    step-limit
    unknown_tool_limit   unknown tools, 2 in a row (a known tool resets it)    unknown-tool
    format_error_limit   3 replies in a row without a usable action            format-limit
    repeated_call_limit  a call made again unchanged, with the same result
                         or error, `repeat_limit` (2) times in a run
    model_exhausted      the scripted model ran out of completions             script-runs-out
    canceled             Ctrl-C, or a scripted interrupt: the part of the      canceled
                         reply the user saw is kept, and the run is saved
    model_error          the model failed to answer; `detail` says why         model-error
    agent_stopped        an agent recorded by `harness proxy` made no further call
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple

from harness.decisions import Round
from harness.transcript import Author


class StopReason(StrEnum):
    FINAL_ANSWER = "final_answer"  # the model wrote its final answer (or called finish)
    MAX_STEPS = "max_steps"  # the step limit was reached first
    UNKNOWN_TOOL_LIMIT = "unknown_tool_limit"  # too many unknown tools in a row
    FORMAT_ERROR_LIMIT = "format_error_limit"  # too many replies without a usable action in a row
    REPEATED_CALL_LIMIT = "repeated_call_limit"  # the same failing call, made again too often
    MODEL_EXHAUSTED = "model_exhausted"  # a scripted model ran out of completions
    CANCELED = "canceled"  # interrupted (Ctrl-C); the partial transcript is kept
    MODEL_ERROR = "model_error"  # the model failed to answer
    AGENT_STOPPED = "agent_stopped"  # an agent behind harness proxy made no further call


class RoundStarted(NamedTuple):
    step: int
    prompt_chars: int  # the whole buffer is sent, fresh, every call


class TextDelta(NamedTuple):
    text: str  # only text that can no longer turn into a stop string


class CompletionEnded(NamedTuple):
    step: int
    text: str  # what the buffer keeps
    cut: str  # what was read but is kept out of the buffer ("" if nothing)
    cut_by: str  # "stop" (a stop sequence), "prefix" (the prefix rule), or ""
    round: Round  # the lanes, what the user saw, the accepted actions, the answer


class Usage(NamedTuple):
    step: int
    prompt_chars: int  # the whole buffer, sent again
    completion_chars: int
    total_prompt_chars: int  # all prompt characters sent so far in this run


class TokensCounted(NamedTuple):  # only from a backend that can count: the model's own figures for one call
    step: int
    prompt_tokens: int
    evaluated_tokens: int | None  # what it processed; the rest came from its prefix cache
    completion_tokens: int | None


class ActionParsed(NamedTuple):
    step: int
    number: int  # the Action line's number in the completion, from 1
    tool: str
    raw: str  # the arguments as the model wrote them


class ToolStarted(NamedTuple):
    step: int
    number: int
    tool: str


class ToolResult(NamedTuple):
    step: int
    number: int
    tool: str
    result: str
    ok: bool


class Notice(NamedTuple):
    step: int
    code: str  # stable, e.g. protocol_violation.no_action
    message: str
    index: int | None = None
    tool: str | None = None
    violations: tuple[str, ...] = ()


class Appended(NamedTuple):
    author: Author
    text: str


class Stopped(NamedTuple):
    reason: StopReason
    final_answer: str | None
    steps: int
    detail: str = ""  # e.g. the model error's message


Event = (
    RoundStarted | TextDelta | CompletionEnded | Usage | TokensCounted | ActionParsed | ToolStarted | ToolResult | Notice | Appended | Stopped
)


def plain(value: Any) -> Any:
    """An event as JSON data: each value by its field's name, nested ones too (a Round)."""
    if not isinstance(value, tuple):
        return value
    items = [plain(v) for v in value]
    return dict(zip(value._fields, items)) if hasattr(value, "_fields") else items
