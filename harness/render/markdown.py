"""A run as Markdown for course notes: one section per step, the buffer's new part in the
save format (so every line names its author), what of it the user was not shown, what
the stop sequence cut, and the lesson's three facts."""

from __future__ import annotations

from harness.escape import for_markdown, for_terminal
from harness.render.frames import KINDS, NO_STOP, frames, parts, stop_was_off
from harness.render.live import MARKS, cut_note, preview
from harness.run_record import RunRecord
from harness.transcript import Transcript, records


NOTES_HEADER = "# harness · "  # notes of ours begin so (the title line)
LEGEND = (
    "Every line of the buffer names its author: `developer`, `model` or `code`. "
    "✗ marks text that is in the buffer but was not shown to the user (a lane its gate denied); "
    "✂ marks text the stop sequence cut, which was never in the buffer."
)


def notes(record: RunRecord, title: str) -> str:
    fs = frames(record)
    out = [f"# {for_markdown(title)}", "", LEGEND, ""]
    if stop_was_off(record):
        out += [f"> **{NO_STOP}**", ""]
    for f in fs:
        part = Transcript()
        part.append(f.author, f.added)
        # Every record line begins with its author, so no text inside can close the fence.
        # Inside the fence nothing renders as Markdown; control characters are still shown, not obeyed.
        out += [f"## Step {f.index} of {len(fs) - 1}", "", "```text", *map(for_terminal, records(part)), "```", ""]
        for text, kind in parts(f):
            if kind in ("denied", "withheld"):
                shown = for_markdown(preview(text.removesuffix("\n")))
                out += [f"> {MARKS[kind]} {KINDS[kind]}: {shown}", ""]
        if f.cut:
            out += [f"> {for_markdown(cut_note(f.cut, f.cut_by))}", ""]
        out += [f"- **sent:** {f.sent}", f"- **appended:** by {f.author.value}, {len(f.added):,} characters", f"- **why:** {for_markdown(f.why)}", ""]
    return "\n".join(out)
