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

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from harness.decisions import Action, Rejection, Round
from harness.dialects import Dialect
from harness.entry import Entry, Redaction, environment_keys, is_secret_key, neutralise
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
from harness.governor import Governor
from harness.judge import why_failed
from harness.limits import Limits, Tally
from harness.model import Model, ModelError, ModelExhausted, as_model
from harness.notices import more_rejections, repeated_call
from harness.reading import Canceled, Emit, Reply, read
from harness.run_record import CallRecord, RunRecord
from harness.stop import StopScanner
from harness.transcript import Author, Frames, Transcript
from harness.unseen import unseen

if TYPE_CHECKING:
    from harness.tools import Registry

NOTICES_PER_REPLY = 10  # notices written one by one for one reply; the rest are summed up in one
UNLIMITED = -1  # peek: read the whole completion after a cut (a script costs nothing to read)


@dataclass
class Setup:
    """Everything a run needs except the model: the buffer so far, the rules, and where the
    run came from (kept in its record, so that it can be replayed)."""

    transcript: Transcript
    dialect: Dialect
    tools: Registry
    limits: Limits = Limits()
    use_stop: bool = True  # False shows what the model writes when nothing cuts it
    peek: int = 0  # characters read past a stop, only to show what it prevented (UNLIMITED: all)
    send_stop: bool = True  # False: the server is not told the stops; only the scanner cuts
    frames: Frames = Frames()  # the developer's text around code's turn (a chat template's)
    question: str = ""  # what a tool's example, copied as it is, must be found in to run
    scenario: Any = None  # the scenario it was built from (harness.scenario), if any
    source: Any = None  # where it came from (harness.source): what a replay rebuilds it from
    workspace: Any = None  # the files its tools change (harness.workspace), as the record keeps them
    redaction: Redaction = Redaction()  # the user's patterns, masked in model text and tool output (harness.entry)


def nobody(event: Event) -> None:
    """The listener when nobody listens: then no event is made at all."""


def run(setup: Setup, model: Model, emit: Emit = nobody) -> RunRecord:
    model = as_model(model)
    model.check(setup.transcript)  # what it cannot be sent is refused before anything is shown
    dialect, tally = setup.dialect, Tally(setup.limits)
    out = Writer(setup, model, emit)
    step = 0
    try:
        while step < setup.limits.max_steps:
            step += 1
            out.cue(dialect.cue(step))  # closing code's turn first, if a chat template frames it
            decided = out.answered(step, complete(model, step, setup, out))  # the completion, verbatim, even when empty
            out.notices(step, decided.rejections)
            if decided.answer is not None:  # its lane opened: the user has it, the run is done
                return out.stop(StopReason.FINAL_ANSWER, step, decided.answer)
            for number, action in decided.actions:  # in call order
                result, ok = out.tool(setup.tools, step, number, action)
                if ok and setup.tools[action.tool].ends_run:  # finish(message): done, at once
                    return out.stop(StopReason.FINAL_ANSWER, step, result)
                out.code(dialect.observation(step, number, result))
                if first := tally.again(step, action, result):  # made again with the same result
                    out.notice(step, repeated_call(number, action.tool, first, ok))
                elif not ok and (hint := why_failed(dialect, setup.tools, number, action)):  # a parameter's name for its value
                    out.notice(step, hint)
            if reason := tally.after(decided):
                return out.stop(reason, step)
        return out.stop(StopReason.MAX_STEPS, step)
    except Canceled as c:
        out.canceled(*c.args)
        return out.stop(StopReason.CANCELED, step)
    except ModelExhausted as e:  # a call that never answered is not a step
        return out.stop(StopReason.MODEL_EXHAUSTED, step - 1, detail=str(e))
    except ModelError as e:  # a server's words may quote what was sent: the user's patterns mask them too
        return out.stop(StopReason.MODEL_ERROR, step - 1, detail=setup.redaction(str(e)))
    except KeyboardInterrupt:
        return out.stop(StopReason.CANCELED, step)


def complete(model: Model, step: int, setup: Setup, out: Writer) -> Reply:
    """One model call: chunks pass the stop scanner, then the lanes' gates, then the user."""
    stops = setup.dialect.stops(step) if setup.use_stop else ()
    out.tell(RoundStarted, step, len(setup.transcript))
    chunks = setup.redaction.over(model.complete(setup.transcript, stops if setup.send_stop else ()))  # the whole buffer, fresh
    try:
        return read(chunks, StopScanner(stops), Governor(setup.dialect, setup.tools, setup.question), setup.peek, out.emit if out.listening else None)
    finally:
        chunks.close()  # a stop was found: the model stops generating


class Writer:
    """Every append to the buffer goes through here, with its event; it keeps the record."""

    def __init__(self, setup: Setup, model: Model, emit: Emit) -> None:
        self.setup, self.model, self.emit = setup, model, emit
        self.listening = emit is not nobody
        self.buffer, self.dialect, self.frames = setup.transcript, setup.dialect, setup.frames
        self.codes_turn = False  # code has written since the model's last turn
        self.calls: list[CallRecord] = []  # the model calls that are over
        self.reply: Reply | None = None  # the current call's
        self.ran: list[str] = []  # its tools that ran
        self.told: list[str] = []  # its notices' codes
        self.sent = 0  # prompt characters sent so far
        self.fresh = not len(self.buffer) or self.buffer.text.endswith("\n")  # the buffer ends a line (kept up by `write`)
        self.scrub = Entry(key for _, key in environment_keys() if is_secret_key(key)).scrub  # for tool output, in any run
        for span in self.buffer.spans:  # what the developer wrote before the first call
            self.tell(Appended, span.author, span.text)

    def tell(self, event: type, *fields: object) -> None:
        """Emit an event, made only if somebody listens."""
        if self.listening:
            self.emit(event(*fields))

    def write(self, author: Author, text: str) -> None:
        self.buffer.append(author, text)
        if text:
            self.fresh = text.endswith("\n")
        self.tell(Appended, author, text)

    def code(self, text: str, framed: bool = True) -> None:
        """Code's lines start on a line of their own and never hold a control token (a tool's
        `<|im_end|>` must not end the model's turn); the developer's `before_code` opens its turn."""
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
        self.code(text, framed=False)

    def answered(self, step: int, reply: Reply) -> Round:
        """The completion goes into the buffer as it is, its facts into the record; returns the decisions."""
        prompt_chars = len(self.buffer)  # all of it was sent
        self.write(Author.MODEL, reply.text)
        self._next_call(reply)
        self.sent += prompt_chars
        self.tell(CompletionEnded, step, reply.text, reply.cut, reply.cut_by, reply.decided)
        self.tell(Usage, step, prompt_chars, len(reply.text), self.sent)
        if (t := reply.tokens) is not None:
            self.tell(TokensCounted, step, t.prompt_tokens, t.evaluated_tokens, t.completion_tokens)
        return reply.decided

    def canceled(self, shown: str, unshown: str) -> None:
        """Ctrl-C mid-completion: what the user had seen of it stays in the buffer; the rest read is its cut."""
        self.write(Author.MODEL, shown)
        self._next_call(Reply("", unshown))

    def notices(self, step: int, rejections: Sequence[Rejection]) -> None:
        """One notice per rejection, up to a bound: then one summary, not 100,000 notices."""
        for r in rejections[:NOTICES_PER_REPLY]:
            self.notice(step, r)
        if rest := rejections[NOTICES_PER_REPLY:]:
            self.notice(step, more_rejections(len(rest), (r.code for r in rest)))

    def notice(self, step: int, r: Rejection) -> None:
        self.tell(Notice, step, r.code, r.message, r.index, r.tool, r.violations)
        self.told.append(r.code)
        self.code(self.dialect.notice(step, r._asdict()))  # code, message, index, tool, violations

    def tool(self, tools: Registry, step: int, number: int, action: Action) -> tuple[str, bool]:
        self.tell(ActionParsed, step, number, action.tool, action.raw)
        self.tell(ToolStarted, step, number, action.tool)
        result, ok = tools.run(action.tool, action.args, action.kwargs)
        result = self.setup.redaction(self.scrub(result))  # the environment's API keys as ***; a tool's "\ud800" as U+FFFD
        self.tell(ToolResult, step, number, action.tool, result, ok)
        self.ran.append(action.tool)
        return result, ok

    def _next_call(self, reply: Reply | None) -> None:
        """Close the current call's record (what ran, what was told) and open the next."""
        if (r := self.reply) is not None:
            tokens = None if r.tokens is None else asdict(r.tokens)
            hidden = unseen(r.text, r.decided) if r.decided.rejections else ()  # (a lane is denied with a rejection)
            self.calls.append(CallRecord(r.cut, r.cut_by, tuple(self.ran), tuple(self.told), tokens, hidden, r.messages))
        self.reply, self.ran, self.told = reply, [], []

    def stop(self, reason: StopReason, steps: int, answer: str | None = None, detail: str = "") -> RunRecord:
        self._next_call(None)
        self.tell(Stopped, reason, answer, steps, detail)
        setup, workspace = self.setup, self.setup.workspace
        return RunRecord(
            self.buffer, reason, answer, steps, detail, tuple(self.calls), scenario=setup.scenario, source=setup.source,
            workspace=None if workspace is None else workspace.files, model=self.model.name, endpoint=self.model.endpoint,
        )
