"""What a call of a chat run was sent, for the stepper (`m`, `--frame K --messages`) and the
page: the run's messages (harness.backends.messages), of which call i was sent the first counts[i]."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from harness.backends.messages import sent_counts
from harness.escape import for_terminal
from harness.render.frames import Frame
from harness.render.live import NOTE_STYLE, STYLES
from harness.render.wrap import row_lines
from harness.run_record import RunRecord
from harness.transcript import Author, split_lines

NOT_CHAT = "m: this run did not use chat: each call was sent the buffer as one text"  # one line at 80 columns
ROLE_STYLE = {"assistant": STYLES[Author.MODEL], "user": ""}


class SentMessages:
    """The messages of a run's calls, by frame."""

    def __init__(self, record: RunRecord, frames: list[Frame]) -> None:
        self.chat = record.scenario is not None and record.scenario.endpoint == "chat"
        self.messages, self.counts = sent_counts(record.transcript.spans) if self.chat else ([], [])
        model_frames = [f.index for f in frames if f.author is Author.MODEL]
        self.call_of = {k: call for call, k in enumerate(model_frames)}  # a model frame -> its call, from 0

    def count_of(self, k: int) -> int | None:
        """How many of the run's messages frame k's call was sent (None: no call, or not chat)."""
        call = self.call_of.get(k) if self.chat else None
        return None if call is None or call >= len(self.counts) else self.counts[call]

    def heading_line(self, k: int) -> Text:
        """What the view of frame k shows, or why it shows nothing."""
        count = self.count_of(k)
        if not self.chat:
            said = NOT_CHAT
        elif count is None:
            said = f"what was sent: no call wrote frame {k} (a model frame shows what its call was sent)"
        else:
            said = f"what was sent: call {self.call_of[k] + 1}, {count} message{'s' if count != 1 else ''} by the chat rule (m: back to the buffer)"
        return Text(for_terminal(said), style=NOTE_STYLE)

    def lines(self, k: int, console: Console, width: int) -> list[Text]:
        """Frame k's messages as physical lines, each led by its role."""
        out: list[Text] = []
        for message in self.messages[: self.count_of(k) or 0]:
            role = message["role"]
            for row in split_lines(message["content"]) or [""]:
                out += row_lines(role, ROLE_STYLE.get(role, ""), row.rstrip("\n"), console, width)
        return out
