"""The loop. Read `run` beside the seed's ten lines; it is the same loop:

    buffer = prompt + question
    while True:
        completion = model(buffer, stop=["Observation:"])   # the model sees ALL of it, fresh
        buffer += completion                                 # verbatim
        if "Final Answer:" in completion: break
        action = parse(completion)                           # regex on "Action: tool(args)"
        buffer += "Observation: " + run_tool(action)         # only code writes observations

What it adds: the completion streams through the stop scanner (harness.stop) and the
lanes' gates (harness.governor), which decide what the user sees and which actions run;
every rejected candidate becomes a notice written by code, so the model learns exactly
which rule it broke; limits end a run with a named stop reason; every step is an event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from harness.dialects import Dialect
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
    ToolStarted,
    Usage,
)
from harness.governor import Governor, Rejection
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
    step = unknown_tools = format_errors = sent = 0

    def write(author: Author, text: str) -> None:
        buffer.append(author, text)
        emit(Appended(author, text))

    def code(text: str) -> None:  # code's lines always start on a line of their own
        if text:
            write(Author.CODE, ("" if buffer.text.endswith("\n") or not buffer.spans else "\n") + text)

    def notice(r: Rejection) -> None:
        emit(Notice(step, r.code, r.message, r.index, r.tool, r.violations))
        code(dialect.notice(step, asdict(r)))  # code, message, index, tool, violations

    def stop(reason: StopReason, answer: str | None = None, detail: str = "", steps: int | None = None) -> RunResult:
        steps = step if steps is None else steps
        emit(Stopped(reason, answer, steps, detail))
        return RunResult(reason, answer, steps, buffer, detail)

    for span in buffer.spans:  # what the developer wrote before the first call
        emit(Appended(span.author, span.text))
    try:
        while step < limits.max_steps:
            step += 1
            code(dialect.cue(step))
            prompt_chars = len(buffer.text)
            emit(RoundStarted(step, prompt_chars))
            stops = dialect.stops(step) if agent.use_stop else ()
            try:
                completion = complete(model, step, buffer.text, stops, Governor(dialect, agent.tools), emit)
            except Canceled as c:
                write(Author.MODEL, c.shown)
                return stop(StopReason.CANCELED)
            except ModelExhausted as e:  # a call that never answered is not a step
                return stop(StopReason.MODEL_EXHAUSTED, detail=str(e), steps=step - 1)
            except ModelError as e:
                return stop(StopReason.MODEL_ERROR, detail=str(e), steps=step - 1)
            write(Author.MODEL, completion.text)  # verbatim, even when empty
            emit(completion)
            sent += prompt_chars
            emit(Usage(step, prompt_chars, len(completion.text), sent))

            decided = completion.round
            for rejection in decided.rejections:
                notice(rejection)
            if decided.answer is not None:  # its lane opened: the user has it, the run is done
                return stop(StopReason.FINAL_ANSWER, decided.answer)
            if not decided.actions:
                if any(r.code == "protocol_violation.unknown_tool" for r in decided.rejections):
                    unknown_tools += 1
                    if unknown_tools == limits.unknown_tool_limit:
                        return stop(StopReason.UNKNOWN_TOOL_LIMIT)
                else:
                    format_errors += 1
                    if format_errors == limits.format_error_limit:
                        return stop(StopReason.FORMAT_ERROR_LIMIT)
                continue
            unknown_tools = format_errors = 0
            for number, action in decided.actions:  # in call order
                emit(ActionParsed(step, number, action.tool, action.raw))
                emit(ToolStarted(step, number, action.tool))
                result, ok = agent.tools.run(action.tool, action.args, action.kwargs)
                emit(ToolResult(step, number, action.tool, result, ok))
                if ok and agent.tools[action.tool].ends_run:  # finish(message): done, at once
                    return stop(StopReason.FINAL_ANSWER, result)
                code(dialect.observation(step, number, result))
        return stop(StopReason.MAX_STEPS)
    except KeyboardInterrupt:
        return stop(StopReason.CANCELED)


def complete(
    model: Model, step: int, prompt: str, stops: tuple[str, ...], governor: Governor, emit: Callable[[Event], None]
) -> CompletionEnded:
    """One model call: chunks pass the stop scanner, then the lanes' gates, then the user."""
    scanner, kept = StopScanner(stops), []

    def take(text: str) -> None:
        kept.append(text)
        if shown := governor.feed(text):
            emit(TextDelta(shown))

    chunks = model.stream(prompt, stops)
    try:
        for chunk in chunks:
            take(scanner.feed(chunk))
            if scanner.stopped or governor.stopped:
                break  # a server that ignored `stop`, or a reply already rejected, is not read further
        if not governor.stopped:
            take(scanner.finish())
            if tail := governor.finish():
                emit(TextDelta(tail))
    except KeyboardInterrupt:
        # Keep the completion up to the last character the user saw.
        raise Canceled("".join(kept)[: governor.shown_end]) from None
    finally:
        getattr(chunks, "close", lambda: None)()
    text, decided = "".join(kept), governor.result()
    if decided.prefix_rejected:  # nothing of it is kept: what was read is quoted in the notice
        return CompletionEnded(step, "", text, "prefix", decided)
    # A scripted model knows what it cut; a real server cuts silently.
    cut = scanner.cut or getattr(model, "last_cut", "")
    return CompletionEnded(step, text, cut, "stop" if cut else "", decided)
