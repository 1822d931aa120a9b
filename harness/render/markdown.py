"""A run as Markdown for course notes: one section per step, the buffer's new part in the
save format (so every line names its author), and the lesson's three facts."""

from __future__ import annotations

from harness.escape import for_markdown, for_terminal
from harness.render.frames import frames
from harness.render.live import preview
from harness.run_record import RunRecord
from harness.transcript import Transcript, records


NOTES_HEADER = "# harness · "  # notes of ours begin so (the title line)


def notes(record: RunRecord, title: str) -> str:
    fs = frames(record)
    out = [f"# {for_markdown(title)}", ""]
    for f in fs:
        part = Transcript()
        part.append(f.author, f.added)
        # Every record line begins with its author, so no text inside can close the fence.
        # Inside the fence nothing renders as Markdown; control characters are still shown, not obeyed.
        out += [f"## Step {f.index} of {len(fs) - 1}", "", "```text", *map(for_terminal, records(part)), "```", ""]
        if f.cut:
            out += [f"> ✂ cut by the stop sequence, never in the buffer: {for_markdown(preview(f.cut))}", ""]
        out += [f"- **sent:** {f.sent}", f"- **appended:** by {f.author.value}, {len(f.added):,} characters", f"- **why:** {for_markdown(f.why)}", ""]
    return "\n".join(out)
