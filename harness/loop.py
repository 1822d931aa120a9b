"""The loop. Read `run` beside the seed's ten lines; it is the same loop:

    buffer = prompt + question
    while True:
        completion = model(buffer, stop=["Observation:"])   # the model sees ALL of it, fresh
        buffer += completion                                 # verbatim
        if "Final Answer:" in completion: break
        action = parse(completion)                           # regex on "Action: tool(args)"
        buffer += "Observation: " + run_tool(action)         # only code writes observations

What it adds: limits that end a run with a named stop reason, and a notice (written by
code) when a completion breaks the format or names a tool that does not exist, so the
model learns exactly which rule it broke.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from harness.dialects import Action, Dialect, FinalAnswer, NoAction
from harness.events import (
    ActionParsed,
    Appended,
    CompletionEnded,
    Event,
    Notice,
    RoundStarted,
    Stopped,
    StopReason,
    TextDelta,
    ToolResult,
)
from harness.model import Model, ModelError, ModelExhausted
from harness.stop import StopScanner
from harness.tools import Registry
from harness.transcript import Author, Transcript


@dataclass(frozen=True)
class Limits:
    max_steps: int = 15  # model calls
    unknown_tool_limit: int = 2  # unknown tools in a row; a known tool resets the count; 0: off
    format_error_limit: int = 3  # completions without a usable action in a row; 0: off


@dataclass
class Agent:
    """Everything a run needs except the model: the buffer so far and the rules."""

    transcript: Transcript
    dialect: Dialect
    tools: Registry
    limits: Limits = field(default_factory=Limits)
    use_stop: bool = True  # False shows what the model writes when nothing cuts it


@dataclass(frozen=True)
class RunResult:
    stop_reason: StopReason
    final_answer: str | None
    steps: int
    transcript: Transcript
    detail: str = ""


class Canceled(Exception):
    def __init__(self, shown: str) -> None:
        super().__init__("canceled")
        self.shown = shown  # the part of the completion that had reached the user


def run(agent: Agent, model: Model, emit: Callable[[Event], None] = lambda event: None) -> RunResult:
    buffer, dialect, limits = agent.transcript, agent.dialect, agent.limits
    step = unknown_tools = format_errors = 0

    def write(author: Author, text: str) -> None:
        buffer.append(author, text)
        emit(Appended(author, text))

    def code(text: str) -> None:  # code's lines always start on a line of their own
        if text:
            write(Author.CODE, ("" if buffer.text.endswith("\n") or not buffer.spans else "\n") + text)

    def notice(rule_code: str, message: str) -> None:
        emit(Notice(step, rule_code, message))
        code(dialect.notice(step, rule_code, message))

    def stop(reason: StopReason, answer: str | None = None, detail: str = "", steps: int | None = None) -> RunResult:
        steps = step if steps is None else steps
        emit(Stopped(reason, answer, steps, detail))
        return RunResult(reason, answer, steps, buffer, detail)

    try:
        while step < limits.max_steps:
            step += 1
            code(dialect.cue(step))
            emit(RoundStarted(step, len(buffer.text)))
            try:
                completion = complete(model, step, buffer.text, dialect.stops(step) if agent.use_stop else (), emit)
            except Canceled as c:
                write(Author.MODEL, c.shown)
                return stop(StopReason.CANCELED)
            except ModelExhausted as e:  # a call that never answered is not a step
                return stop(StopReason.MODEL_EXHAUSTED, detail=str(e), steps=step - 1)
            except ModelError as e:
                return stop(StopReason.MODEL_ERROR, detail=str(e), steps=step - 1)
            write(Author.MODEL, completion.text)  # verbatim, even when empty
            emit(completion)

            match dialect.parse(completion.text):
                case FinalAnswer(answer):
                    return stop(StopReason.FINAL_ANSWER, answer)
                case NoAction(rule):
                    format_errors += 1
                    notice("protocol_violation.no_action", f"{rule}. Write {dialect.expected}.")
                    if format_errors == limits.format_error_limit:
                        return stop(StopReason.FORMAT_ERROR_LIMIT)
                case Action(tool, raw=raw) if tool not in agent.tools:
                    unknown_tools += 1
                    emit(ActionParsed(step, tool, raw))
                    notice(
                        "protocol_violation.unknown_tool",
                        f"There is no tool named {tool!r}. Valid tools: {', '.join(agent.tools.names)}.",
                    )
                    if unknown_tools == limits.unknown_tool_limit:
                        return stop(StopReason.UNKNOWN_TOOL_LIMIT)
                case Action(tool, args, kwargs, raw):
                    unknown_tools = format_errors = 0
                    emit(ActionParsed(step, tool, raw))
                    result, ok = agent.tools.run(tool, args, kwargs)
                    emit(ToolResult(step, tool, result, ok))
                    if ok and agent.tools[tool].ends_run:  # finish(message): done, at once
                        return stop(StopReason.FINAL_ANSWER, result)
                    code(dialect.observation(step, result))
        return stop(StopReason.MAX_STEPS)
    except KeyboardInterrupt:
        return stop(StopReason.CANCELED)


def complete(
    model: Model, step: int, prompt: str, stops: tuple[str, ...], emit: Callable[[Event], None]
) -> CompletionEnded:
    """One model call, streamed through the client-side stop scanner."""
    scanner, shown = StopScanner(stops), []
    chunks = model.stream(prompt, stops)
    try:
        for chunk in chunks:
            if safe := scanner.feed(chunk):
                shown.append(safe)
                emit(TextDelta(safe))
            if scanner.stopped:
                break  # a server that ignored `stop` is not read any further
        if tail := scanner.finish():
            shown.append(tail)
            emit(TextDelta(tail))
    except KeyboardInterrupt:
        raise Canceled("".join(shown)) from None
    finally:
        getattr(chunks, "close", lambda: None)()
    # A scripted model knows what it cut; a real server cuts silently.
    cut = scanner.cut or getattr(model, "last_cut", "")
    return CompletionEnded(step, "".join(shown), cut)
