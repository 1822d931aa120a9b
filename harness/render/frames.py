"""A run as a sequence of frames, for stepping through it: "Frame k of N".

Frame 0 is the developer's prompt; each later frame adds one span of the buffer, with the
lesson's three facts: what was sent to the model, what was appended and by whom, and why
the loop went on or stopped. And the cost of resubmission: the whole buffer is sent on
every call, so the characters sent grow with the square of the calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.events import StopReason
from harness.run_record import CallRecord, RunRecord
from harness.transcript import Author, Transcript

CHARS_PER_TOKEN = 4  # a rough rule for English text; token figures are estimates


@dataclass(frozen=True, slots=True)
class Frame:
    index: int  # 0 .. N
    author: Author  # who wrote the newest part
    added: str  # the newest part of the buffer
    cut: str  # a model frame: what was read but kept out of the buffer
    sent: str  # what was sent to the model for this part
    why: str  # why the loop went on, or stopped, after it
    notice_lines: int = 0  # a code frame: how many of its first lines are notices (code's answer to a broken rule)
    cut_by: str = ""  # what cut `cut`: "stop" (the stop sequence), "prefix" (the prefix rule) or "" (a Ctrl-C)
    hidden: tuple[tuple[int, int, str], ...] = ()  # a model frame: (start, end, lane) in the buffer, not shown to the user
    unran: tuple[str, ...] = ()  # the last model frame: Action lines that never ran, as its Final Answer ended the run


# What a part of the buffer is, besides its author; the same words in every view.
KINDS = {
    "notice": "a notice: code's answer to a broken rule",
    "denied": "in the buffer, not shown to the user: its gate denied this action",
    "withheld": "in the buffer, not shown to the user: the final answer was withheld",
}
# A frame's "sent" and "why" by its author; a model frame's own come from its call (frames()).
NOT_MODEL = {
    Author.CODE: ("nothing: code writes this part, the model does not", "Code has spoken; the loop goes on: the whole buffer goes to the model again."),
    Author.DEVELOPER: ("nothing yet: the developer's prompt and the question start the buffer", "The loop begins: the whole buffer goes to the model."),
}
MODEL_WHY = {  # by (a tool ran, code wrote a notice)
    (True, True): "Code runs the accepted action and answers the rest with a notice; the loop goes on.",
    (False, True): "Nothing ran: code answers with a notice that names the broken rule; the loop goes on.",
}
ACTION_WHY = "An Action line and no final answer: code runs the tool and splices in the result; the loop goes on."
NO_STOP = (
    "The stop sequence was off for this run (--no-stop): nothing cut what the model wrote, "
    "so an observation it invented stands in the buffer as model text."
)


def stop_was_off(record: RunRecord) -> bool:
    return record.scenario is not None and not record.scenario.use_stop


def parts(frame: Frame) -> list[tuple[str, str]]:
    """The frame's text in pieces of whole lines, each with its kind: "" or a key of KINDS."""
    if frame.hidden:
        out, at = [], 0
        for start, end, lane in frame.hidden:
            out += [(frame.added[at:start], ""), (frame.added[start:end], "withheld" if lane == "answer" else "denied")]
            at = end
        return [p for p in [*out, (frame.added[at:], "")] if p[0]]
    if not frame.notice_lines:
        return [(frame.added, "")]
    lead = 1 if frame.added.startswith("\n") else 0  # code begins on a line of its own
    end = lead
    for _ in range(frame.notice_lines):
        end = frame.added.find("\n", end) + 1 or len(frame.added)
    pieces = [(frame.added[:lead], ""), (frame.added[lead:end], "notice"), (frame.added[end:], "")]
    return [p for p in pieces if p[0]]


def frames(record: RunRecord) -> list[Frame]:
    spans, calls = record.transcript.spans, iter(record.calls)
    out, before, call, told = [], 0, CallRecord(), 0
    no_stop, unran = stop_was_off(record), ()
    if record.stop_reason is StopReason.FINAL_ANSWER and spans and spans[-1].author is Author.MODEL:
        # The Action lines of the last reply that its own Final Answer kept from running, read
        # again by the loop's own reader (harness.governor).
        from harness.dialects import get_dialect
        from harness.governor import read
        from harness.decisions import unran as unran_of

        dialect = get_dialect(record.scenario.dialect if record.scenario is not None else "default")
        unran = tuple(unran_of(read(dialect, spans[-1].text)))
    for i, span in enumerate(spans):
        sent, why = NOT_MODEL.get(span.author, ("", ""))
        if span.author is Author.MODEL:
            call = next(calls, CallRecord())
            why = MODEL_WHY.get((bool(call.ran), bool(call.notices)), ACTION_WHY)
            told = len(call.notices)  # not yet written: the loop writes them first after the reply
            sent = f"completion = model(buffer): the whole buffer, {before:,} characters, sent fresh"
            if call.messages is not None:  # a chat endpoint: the same buffer, cut by author (harness.backends.messages)
                sent = f"completion = model(messages(buffer)): the whole buffer, {before:,} characters, sent fresh as {call.messages} chat message{'s' if call.messages != 1 else ''}"
            if no_stop:
                sent += ", with no stop sequence: nothing cuts what it writes"
        if i == len(spans) - 1:
            why = f"The loop stopped: {record.stop_reason.value}." + (f" Final answer: {record.final_answer}" if record.final_answer is not None else "")
        notices = 0
        if span.author is Author.CODE and told:  # one line each, before the observations
            notices = min(told, max(1, span.text.count("\n") - span.text.startswith("\n")))
            told -= notices
        own = call if span.author is Author.MODEL else CallRecord()  # what a model frame's call cut or hid
        last_ran = unran if i == len(spans) - 1 else ()
        out.append(Frame(i, span.author, span.text, own.cut, sent, why, notices, own.cut_by, own.hidden, last_ran))
        before += len(span.text)
    return out


@dataclass(frozen=True, slots=True)
class CallCost:
    call: int
    prompt_chars: int  # sent: the whole buffer
    completion_chars: int
    total_sent: int  # prompt characters sent so far, all calls
    cached_new: int  # what a prefix cache would have had to process for this prompt
    total_new: int


def costs(transcript: Transcript) -> list[CallCost]:
    out, before, total, total_new, seen = [], 0, 0, 0, 0
    for span in transcript.spans:
        if span.author is Author.MODEL:
            new = before - seen  # what came after the text the cache already holds
            total, total_new = total + before, total_new + new
            out.append(CallCost(len(out) + 1, before, len(span.text), total, new, total_new))
            seen = before + len(span.text)  # the cache now holds the prompt and the completion
        before += len(span.text)
    return out


COUNTS = {"prompt_tokens": "tokens sent", "evaluated_tokens": "tokens evaluated"}  # the model's own counts, by their heading


def cost_cells(rows: list[CallCost], tokens: list[dict | None] | None = None) -> tuple[list[str], list[list[str]]]:
    """The cost table's cells, one row per call, and which of the model's own counts it gave
    (`counted`: a cell each, "?" where a call had none; a count no call gave has no column)."""
    counted = [k for k in COUNTS if any(t and t.get(k) is not None for t in tokens or ())]
    out = []
    for i, r in enumerate(rows):
        cells = [f"{c:,}" for c in (r.call, r.prompt_chars, r.completion_chars, r.total_sent, r.cached_new, r.total_new, r.total_sent // CHARS_PER_TOKEN)]
        t = (tokens[i] if tokens and i < len(tokens) else None) or {}
        out.append(cells + ["?" if t.get(k) is None else f"{t[k]:,}" for k in counted])
    return counted, out


def cost_table(rows: list[CallCost], tokens: list[dict | None] | None = None) -> str:
    counted, cells = cost_cells(rows, tokens)
    head = ("call", "prompt sent", "completion", "total sent", "with prefix cache", "cache total", "≈ tokens sent*", *(COUNTS[k] for k in counted))

    def row(cells) -> str:
        return "  ".join(f"{c:>{len(h) if i == 0 else max(len(h), 10)}}" for i, (h, c) in enumerate(zip(head, cells)))

    lines = [row(head), *map(row, cells), f"figures in characters; * an estimate: characters ÷ {CHARS_PER_TOKEN}, no tokenizer was used"]
    if len(counted) == 2:
        lines.append("tokens sent and evaluated: the model's own counts (evaluated: not taken from its prefix cache)")
    elif counted:
        lines.append(f"{COUNTS[counted[0]]}: the model's own count")
    return "\n".join(lines)
