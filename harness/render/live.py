"""The run for people, drawn from its events as they arrive: the terminal view.

    developer │ Question: Why do my Nimbus uploads keep failing?
    ── call 1 · the model is sent the whole buffer: 612 characters
    model     │ Thought: Failing uploads often mean the storage quota is full.
                ✂ cut by the stop sequence, never in the buffer: Observation: quota was fine…

A lane the gates denied is still model text in the buffer (a row marked ✗); what the stop
sequence cut never was (a note). Off a terminal, plain text without rich (render.styled).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

from harness.escape import for_terminal
from harness.events import Appended, CompletionEnded, Event, RoundStarted, Stopped, TextDelta
from harness.decisions import Lane, Round, unran
from harness.render.styled import Styled
from harness.run_record import RunRecord
from harness.transcript import Author, split_lines

if TYPE_CHECKING:
    from rich.console import Console

STYLES = {Author.DEVELOPER: "blue", Author.MODEL: "green", Author.CODE: "yellow"}
WIDTH = 9  # len("developer"): the author column
NOTE_STYLE = "dim italic"  # a line about the buffer that is not part of it
MARKS = {"notice": "⚠", "denied": "✗", "withheld": "✗", "cut": "✂"}  # a row's mark, by what its text is
SHARED = "⤸ shared line"  # a row whose buffer line the next author goes on with
STOP_OFF = "The stop sequence is off (--no-stop): nothing cuts what the model writes."
CUT_BY = {"stop": "cut by the stop sequence", "prefix": "stopped by the prefix rule", "": "read as Ctrl-C came, never shown"}  # a reply's cut, by what cut it


def legend() -> Styled:
    text = Styled("authors: ")
    for author, style in STYLES.items():
        text.append(f" {author.value} ", style=f"reverse {style}")
        text.append(" ")
    return text.append(f"  {SHARED}", style="dim")


def marks_legend(stepper: bool = False) -> Styled:
    marks = "✗ in the buffer, not shown to the user  ✂ never in the buffer"
    return Styled(("▶ new  ⚠ notice  " if stepper else "") + marks, style="dim")


def cut_note(cut: str, cut_by: str, limit: int | None = None) -> str:
    """What was cut, whole (its newlines shown as ⏎), or its first `limit` characters."""
    return f"✂ {CUT_BY.get(cut_by, 'cut')}, never in the buffer: {preview(cut, limit)}"


def never_ran(actions: list[str] | tuple[str, ...]) -> str:
    """One line on a reply that held Actions and a Final Answer: the answer ended the run first."""
    return f"{'; '.join(a.strip() for a in actions)} never ran: the Final Answer in the same reply ended the run."


class Rows:
    """Buffer text as rows, each led by its author's name: `model     │ text`."""

    def __init__(self) -> None:
        self.author: Author | None = None  # whose row is open
        self.mid_line = False  # the open row has text and no newline yet

    def close(self) -> Styled:  # before something that is not buffer text
        out = Styled("\n" if self.mid_line else "")
        self.author, self.mid_line = None, False
        return out

    def write(self, author: Author, text: str, mark: str = "│") -> Styled:
        style = STYLES[author]
        out = Styled()
        if self.mid_line and author is not self.author:
            out.append(" ⤸\n", style="dim")  # the buffer line goes on, by another author
            self.mid_line = False
        for piece in split_lines(text):
            if not self.mid_line:
                out.append(f"{author.value:<{WIDTH}} {mark} ", style=f"bold {style}")
            out.append(for_terminal(piece.rstrip("\n")), style=style)
            if piece.endswith("\n"):
                out.append("\n")
                self.mid_line = False
            else:
                self.mid_line = bool(piece)
        self.author = author
        return out


class LiveView:
    """Call it with each event; it prints as they come (with `delay` seconds per piece).
    `out` is rich's Console (a terminal), or a text file that gets the plain text."""

    def __init__(self, out: Console | TextIO, delay: float = 0.0, stop_off: bool = False) -> None:
        self.console = out if hasattr(out, "color_system") else None
        self.file = self.console.file if self.console is not None else out
        self.delay = delay
        self.rows = Rows()
        # A person watching sees every piece at once; a file or a pipe gets a step at a time.
        self.at_once = bool(delay) or (self.console is not None and self.console.is_terminal)
        # No colours and no wrapping: rich would write the plain text, so it is written so.
        self.plain = self.console is None or (self.console.color_system is None and self.console.soft_wrap)
        # Shown with the first event: nothing if the run never starts.
        self.pending = legend().append("\n").append_text(marks_legend()).append("\n")
        if stop_off:  # a run with --no-stop: said once, before the first row
            self.pending.append_text(Styled(STOP_OFF, style="bold")).append("\n")
        self.streamed: list[str] = []  # a file's or pipe's model text, drawn as one row when the next event comes

    def __call__(self, event: Event) -> None:
        if type(event) is TextDelta and not self.at_once:
            self.streamed.append(event.text)  # the same rows, once: a 10 MB reply is 1.25 million deltas
            return
        if self.streamed:
            self._print(self.rows.write(Author.MODEL, "".join(self.streamed)), end="")
            self.streamed = []
        match event:
            case Appended(author, text) if author is not Author.MODEL:
                self._print(self.rows.write(author, text), end="")
            case TextDelta(text):
                self._print(self.rows.write(Author.MODEL, text), end="")
                if self.delay:
                    time.sleep(self.delay)
            case RoundStarted(step, prompt_chars):
                self._print(self.rows.close(), end="")
                self._flush()
                self._print(
                    Styled(f"── call {step} · the model is sent the whole buffer: {prompt_chars:,} characters", style="dim")
                )
            case CompletionEnded(_, _, cut, cut_by, decided):
                # What the user was not shown, as model rows marked ✗ after what was shown (drawn
                # as one text: a reply of 100,000 Action lines has 100,000); what was cut, a note.
                denied = Styled()
                for lane in decided.lanes:
                    if lane.status == "denied" and lane.text:
                        kind = "withheld" if lane.kind == "answer" else "denied"
                        from harness.render.frames import KINDS  # (the frames' module is not needed to draw a run)

                        denied.append_text(self.rows.close()).append_text(self.rows.write(Author.MODEL, lane.text, MARKS[kind]))
                        denied.append_text(self.rows.close()).append_text(note(f"✗ {KINDS[kind]}")).append("\n")
                self._print(denied, end="")
                if cut:
                    self._note(cut_note(cut, cut_by))
                if actions := unran(decided):
                    self._note(never_ran(actions))
            case Stopped(reason, answer, steps, detail):
                self._print(self.rows.close(), end="")
                line = Styled(f"stopped: {reason.value} after {steps} call{'s' if steps != 1 else ''}", style="bold")
                if detail:
                    line.append(f" ({for_terminal(detail)})")
                if answer is not None:
                    line.append("\nfinal answer: ", style="bold")
                    line.append(for_terminal(answer))
                self._print(line)
                self._flush()

    def _note(self, message: str) -> None:
        self._print(self.rows.close(), end="")
        self._print(note(message))

    def _print(self, text: Styled, end: str = "\n") -> None:
        self.pending.append_text(text)
        self.pending.append(end)
        if self.at_once:
            self._flush()

    def _flush(self) -> None:
        if not self.pending:
            return
        if self.plain:
            self.file.write(self.pending.expanded())  # tabs expanded, as rich does when it writes text
        else:
            self.console.print(self.pending.rich(), end="")
        self.pending = Styled()


def note(message: str) -> Styled:
    """A line about the buffer that is not part of it, set under the author column."""
    return Styled(f"{'':<{WIDTH}}   {for_terminal(message)}", style=NOTE_STYLE)


def saved_events(record: RunRecord) -> Iterator[Event]:
    """The events a view needs to draw a finished run, from its frames: model text as
    deltas, the parts the user was not shown as the denied lanes they were."""
    from harness.render.frames import frames

    for f in frames(record):
        if f.author is not Author.MODEL:
            yield Appended(f.author, f.added)
            continue
        at, lanes = 0, []
        for start, end, lane in f.hidden:
            if start > at:
                yield TextDelta(f.added[at:start])
            lanes.append(Lane(len(lanes), lane, "denied", 0, f.added[start:end]))
            at = end
        yield TextDelta(f.added[at:])
        lanes += [Lane(len(lanes) + n, "action", "allowed", len(text), text) for n, text in enumerate(f.unran)]
        if f.cut or lanes:  # (unran: the Final Answer ended the run before these Actions could run)
            yield CompletionEnded(0, f.added, f.cut, f.cut_by, Round(lanes=tuple(lanes), answer=record.final_answer if f.unran else None))
    yield Stopped(record.stop_reason, record.final_answer, record.steps, record.detail)


def preview(text: str, limit: int | None = 120) -> str:
    """One line, at most `limit` characters (None: all of it): newlines shown as ⏎, control
    characters visible."""
    flat = for_terminal(text.replace("\n", "⏎"))
    return flat if limit is None or len(flat) <= limit else flat[: limit - 1] + "…"
