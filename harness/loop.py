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
which rule it broke; a chat template's frames (harness.prompts) put what code writes in a
turn of its own; limits end a run with a named stop reason (harness.limits); every step
is an event, and the run ends as one RunRecord that every view reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from harness.backends.control import neutralise
from harness.backends.entry import encodable
from harness.decisions import Action, Rejection, Round
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
    TokensCounted,
    ToolResult,
    ToolStarted,
    Usage,
)
from harness.judge import why_failed
from harness.limits import Limits, Tally
from harness.notices import more_rejections, repeated_call
from harness.model import Model, ModelError, ModelExhausted, TokenUsage
from harness.prompts import Frames
from harness.run_record import CallRecord, RunRecord
from harness.governor import Governor
from harness.reading import Canceled, read
from harness.stop import StopScanner
from harness.tools import Registry
from harness.transcript import Author, Transcript
from harness.unseen import unseen

Emit = Callable[[Event], None]
NOTICES_PER_REPLY = 10  # notices written one by one for one reply; the rest are summed up in one
UNLIMITED = -1  # peek: read the whole completion after a cut (a script costs nothing to read)


@dataclass
class Setup:
    """Everything a run needs except the model: the buffer so far and the rules."""

    transcript: Transcript
    dialect: Dialect
    tools: Registry
    limits: Limits = Limits()
    use_stop: bool = True  # False shows what the model writes when nothing cuts it
    peek: int = 0  # characters read past a stop, only to show what it prevented (UNLIMITED: all)
    send_stop: bool = True  # False: the server is not told the stops; only the scanner cuts
    frames: Frames = Frames()  # the developer's text around code's turn (a chat template's)
    question: str = ""  # what a tool's example, copied as it is, must be found in to run


def nobody(event: Event) -> None:
    """The listener when nobody listens: then the events that come by the chunk are not made."""


def run(setup: Setup, model: Model, emit: Emit = nobody) -> RunRecord:
    dialect, tally = setup.dialect, Tally(setup.limits)
    out = Writer(setup.transcript, dialect, emit, setup.frames)
    step = 0
    try:
        while step < setup.limits.max_steps:
            step += 1
            out.cue(dialect.cue(step))  # closing code's turn first, if a chat template frames it
            call = complete(model, step, setup, emit)
            decided = out.answered(step, call)  # the completion, verbatim, even when empty
            out.notices(step, decided.rejections)
            if decided.answer is not None:  # its lane opened: the user has it, the run is done
                return out.stop(StopReason.FINAL_ANSWER, step, decided.answer)
            if reason := tally.after(decided):
                return out.stop(reason, step)
            for number, action in decided.actions:  # in call order
                result, ok = out.tool(setup.tools, step, number, action)
                if ok and setup.tools[action.tool].ends_run:  # finish(message): done, at once
                    return out.stop(StopReason.FINAL_ANSWER, step, result)
                out.code(dialect.observation(step, number, result))
                if hint := explain(setup, tally, step, number, action, result, ok):
                    out.notice(step, hint)
            if reason := tally.repeated_too_often():
                return out.stop(reason, step)
        return out.stop(StopReason.MAX_STEPS, step)
    except Canceled as c:
        out.canceled(c.shown)
        return out.stop(StopReason.CANCELED, step)
    except ModelExhausted as e:  # a call that never answered is not a step
        return out.stop(StopReason.MODEL_EXHAUSTED, step - 1, detail=str(e))
    except ModelError as e:
        return out.stop(StopReason.MODEL_ERROR, step - 1, detail=str(e))
    except KeyboardInterrupt:
        return out.stop(StopReason.CANCELED, step)


def explain(setup: Setup, tally: Tally, step: int, number: int, action: Action, result: str, ok: bool) -> Rejection | None:
    """A call the model should not have made so: the same call again with the same result
    (failing, or answered already), or, failing, a parameter's name where its value belongs."""
    if first := tally.again(step, action, result):
        return repeated_call(number, action.tool, first, ok)
    return None if ok else why_failed(setup.dialect, setup.tools, number, action)


class Writer:
    """Every append to the buffer goes through here, with its event; it keeps the record."""

    def __init__(self, buffer: Transcript, dialect: Dialect, emit: Emit, frames: Frames = Frames()) -> None:
        self.buffer, self.dialect, self.emit, self.frames = buffer, dialect, emit, frames
        self.listening = emit is not nobody
        self.codes_turn = False  # code has written since the model's last turn
        self.calls: list[CallRecord] = []  # the model calls that are over
        self._call: tuple | None = None  # the current one: cut, cut_by, tokens, what the user did not see, messages
        self._ran: list[str] = []  # its tools that ran
        self._told: list[str] = []  # its notices' codes
        self.sent = 0  # prompt characters sent so far
        self._records: dict[tuple, CallRecord] = {}  # this run's usual call records (call_record)
        self.fresh = not len(buffer) or buffer.endswith("\n")  # the buffer ends a line (kept up by `write`)
        for span in buffer.spans:  # what the developer wrote before the first call
            self.tell(Appended, span.author, span.text)

    def tell(self, event: type, *fields: object) -> None:
        """Emit an event, made only if somebody listens (most runs in tests and CI: nobody).
        The events of every step are written out as `if self.listening: self.emit(...)`."""
        if self.listening:
            self.emit(event(*fields))

    def write(self, author: Author, text: str) -> None:
        self.buffer.append(author, text)
        if text:
            self.fresh = text[-1] == "\n"
        if self.listening:
            self.emit(Appended(author, text))

    def code(self, text: str, framed: bool = True) -> None:
        """Code's lines always start on a line of their own, and never hold a control token:
        a tool result with `<|im_end|>` in it must not end the model's turn. With frames,
        the developer's `before_code` opens code's turn first (its control tokens are the
        developer's, written as the template has them)."""
        if text:
            if framed and not self.codes_turn:
                self.codes_turn = True
                if self.frames.before_code:
                    self.write(Author.DEVELOPER, self.frames.before_code)
            self.write(Author.CODE, neutralise(text) if self.fresh else "\n" + neutralise(text))

    def cue(self, text: str) -> None:
        """Just before a model call: the developer's `after_code` and `cue` close code's turn
        (if it wrote one), then the dialect's own cue (`Thought 2:`), which is code's."""
        if self.codes_turn:
            self.codes_turn = False
            if after := self.frames.after_code + self.frames.cue:
                self.write(Author.DEVELOPER, after)
        if text:
            self.code(text, framed=False)

    def answered(self, step: int, call: Call) -> Round:
        """The model's completion goes into the buffer as it is; its facts into the record.
        Returns what the reader decided on it."""
        text, cut, cut_by, decided, prompt_chars, tokens, messages = call
        self.write(Author.MODEL, text)
        counted = None if tokens is None else asdict(tokens)
        hidden = unseen(text, decided) if decided.rejections else ()  # (a lane is denied with a rejection)
        self._next_call((cut, cut_by, counted, hidden, messages))
        self.sent += prompt_chars
        if self.listening:  # (the event is made only for a listener: the loop needs only `decided`)
            self.emit(CompletionEnded(step, text, cut, cut_by, decided))
            self.emit(Usage(step, prompt_chars, len(text), self.sent))
        if tokens is not None:
            self.tell(TokensCounted, step, tokens.prompt_tokens, tokens.evaluated_tokens, tokens.completion_tokens)
        return decided

    def canceled(self, shown: str) -> None:
        """Ctrl-C mid-completion: what the user had seen of it stays in the buffer."""
        self.write(Author.MODEL, shown)
        self._next_call(("", "", None, (), None))

    def notices(self, step: int, rejections: Sequence[Rejection]) -> None:
        """One notice per rejection, up to a bound: a reply of 100,000 bad lines gets a
        summary after the first few, not 100,000 notices flooding the model's context."""
        if not rejections:
            return  # the usual reply
        for r in rejections[:NOTICES_PER_REPLY]:
            self.notice(step, r)
        if rest := rejections[NOTICES_PER_REPLY:]:
            self.notice(step, more_rejections(len(rest), (r.code for r in rest)))

    def notice(self, step: int, r: Rejection) -> None:
        self.tell(Notice, step, r.code, r.message, r.index, r.tool, r.violations)
        self._told.append(r.code)
        self.code(self.dialect.notice(step, asdict(r)))  # code, message, index, tool, violations

    def tool(self, tools: Registry, step: int, number: int, action: Action) -> tuple[str, bool]:
        if self.listening:
            self.emit(ActionParsed(step, number, action.tool, action.raw))
            self.emit(ToolStarted(step, number, action.tool))
        result, ok = tools.run(action.tool, action.args, action.kwargs)
        result = encodable(result)  # a Python tool's "\ud800" cannot be written: it enters as U+FFFD
        if self.listening:
            self.emit(ToolResult(step, number, action.tool, result, ok))
        self._ran.append(action.tool)
        return result, ok

    def _next_call(self, call: tuple | None) -> None:
        """Close the current call's record (what ran, what was told) and open the next."""
        if self._call is not None:
            cut, cut_by, tokens, hidden, messages = self._call
            self.calls.append(call_record(self._records, cut, cut_by, tuple(self._ran), tuple(self._told), tokens, hidden, messages))
        self._call, self._ran, self._told = call, [], []

    def stop(self, reason: StopReason, steps: int, answer: str | None = None, detail: str = "") -> RunRecord:
        self._next_call(None)
        self.emit(Stopped(reason, answer, steps, detail))
        return RunRecord(self.buffer, reason, answer, steps, detail, tuple(self.calls))


def call_record(records: dict[tuple, CallRecord], *fields) -> CallRecord:
    """A CallRecord; one without a cut or token counts is shared with every call like it in
    the run's `records` (most steps are: the same tool ran, nothing was told): made once,
    not every step. They are frozen values, so sharing them is safe."""
    if fields[0] or fields[4] is not None:  # a cut may be long (not kept here); tokens are a dict, no key
        return CallRecord(*fields)
    record = records.get(fields)
    if record is None:
        if len(records) >= 1024:  # a few kinds of call at a time
            records.clear()
        record = records[fields] = CallRecord(*fields)
    return record


# What one model call gave, as a plain tuple (made every step: a NamedTuple costs a class call):
#   (text, cut, cut_by, decided, prompt_chars, tokens, messages)
#   text, cut, cut_by, decided   as in CompletionEnded (decided: the Round)
#   prompt_chars                 the whole buffer was sent
#   tokens                       the model's own counts (a TokenUsage), if it gave them
#   messages                     a chat endpoint: the buffer was sent as this many messages
Call = tuple[str, str, str, Round, int, "TokenUsage | None", "int | None"]


def astuple_read(r):
    return r.text, r.cut, r.decided, r.tokens, r.sent


def complete(model: Model, step: int, setup: Setup, emit: Emit) -> Call:
    """One model call: chunks pass the stop scanner, then the lanes' gates, then the user."""
    stops = setup.dialect.stops(step) if setup.use_stop else ()
    prompt_chars = len(setup.transcript)
    listening = emit is not nobody
    if listening:
        emit(RoundStarted(step, prompt_chars))
    told = stops if setup.send_stop else ()
    # The whole buffer, as the model reads it: a chat endpoint by author, the script by its
    # length alone, any other model as one text (harness.model.Model).
    reads = getattr(model, "stream_spans", None) or getattr(model, "stream_buffer", None)
    chunks = reads(setup.transcript, told) if reads else model.stream(setup.transcript.text, told)
    try:
        governor = Governor(setup.dialect, setup.tools, setup.question)
        text, cut, decided, tokens, sent = astuple_read(read(chunks, StopScanner(stops), governor, setup.peek, emit if listening else None))
    finally:
        if (close := getattr(chunks, "close", None)) is not None:
            close()
    if decided.prefix_rejected:  # nothing of it is kept: what was read is quoted in the notice
        return "", text, "prefix", decided, prompt_chars, tokens, sent
    return text, cut, "stop" if cut else "", decided, prompt_chars, tokens, sent
