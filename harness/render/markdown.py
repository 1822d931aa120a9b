"""A run as Markdown for course notes: one section per frame, the buffer's new part in the
save format (every line names its author), what the user was not shown, what was cut, and
the lesson's three facts. A chat run's messages follow once, at the end."""

from __future__ import annotations

from harness.escape import for_markdown, for_terminal
from harness.render.frames import KINDS, NO_STOP, frames, parts, stop_was_off
from harness.render.live import MARKS, WIDTH, cut_note, never_ran, preview
from harness.render.sent import SentMessages
from harness.run_record import RunRecord
from harness.transcript import Span, Transcript, records, split_lines


NOTES_HEADER = "# harness · "  # notes of ours begin so (the title line)
LEGEND = (
    "Every line of the buffer names its author: `developer`, `model` or `code`. "
    "✗ marks text that is in the buffer but was not shown to the user (a lane its gate denied); "
    "✂ marks text read from the model that was never in the buffer (cut by the stop sequence, the prefix rule or a Ctrl-C)."
)


def notes(record: RunRecord, title: str) -> str:
    fs = frames(record)
    sent = SentMessages(record, fs)
    out = [f"# {for_markdown(title)}", "", LEGEND, ""]
    if stop_was_off(record):
        out += [f"> **{NO_STOP}**", ""]
    for f in fs:
        part = Transcript([Span(f.author, f.added)])
        # Every record line begins with its author, so no text inside can close the fence.
        # Inside the fence nothing renders as Markdown; control characters are still shown, not obeyed.
        out += [f"## Frame {f.index} of {len(fs) - 1}", "", "```text", *map(for_terminal, records(part)), "```", ""]
        for text, kind in parts(f):
            if kind in ("denied", "withheld"):
                shown = for_markdown(preview(text.removesuffix("\n")))
                out += [f"> {MARKS[kind]} {KINDS[kind]}: {shown}", ""]
        if f.cut:
            out += [f"> {for_markdown(cut_note(f.cut, f.cut_by))}", ""]
        if f.unran:
            out += [f"> {for_markdown(never_ran(f.unran))}", ""]
        out += [f"- **sent:** {f.sent}", f"- **appended:** by {f.author.value}, {len(f.added):,} characters", f"- **why:** {for_markdown(f.why)}"]
        if (count := sent.count_of(f.index)) is not None:
            out.append(f"- **messages:** the call was sent the first {count} of the run's messages (below), by the chat rule")
        out.append("")
    if sent.chat:  # the run's messages once, each line led by its role (so no text can close the fence)
        out += ["## The run's messages", "", "What a chat endpoint was sent, by the chat rule: each call the first of these.", "", "```text"]
        for number, message in enumerate(sent.messages, 1):
            for row in split_lines(message["content"]) or [""]:
                out.append(for_terminal(f"{message['role']:<{WIDTH}} | " + row.removesuffix("\n")))
            if number < len(sent.messages):
                out.append("")
        out += ["```", ""]
    return "\n".join(out)

