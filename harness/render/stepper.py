"""The terminal stepper: one frame of the run at a time, for a projector.

    Frame 2 of 7    authors:  developer   model   code    ⤸ shared line
    model     │ Thought: Failing uploads often mean the storage quota is full.
    code      ▶ Observation: 99.8 GB of 100 GB used

    sent   completion = model(buffer): the whole buffer, 532 characters, sent fresh

A frame is one addition to the buffer (harness.render.frames), every physical line names
its author (harness.render.wrap); each key or resize redraws exactly one screen.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.control import Control
from rich.text import Text

from harness.errors import HarnessError
from harness.escape import for_terminal
from harness.render.frames import Frame
from harness.render.keys import KeyReader
from harness.render.live import STOP_OFF, legend, marks_legend
from harness.render.sent import NOT_CHAT, SentMessages
from harness.render.wrap import BufferLines

KEYS = {
    "next": ("\r", "\n", " ", "\x1b[C", "\x1bOC"),
    "back": ("\x1b[D", "\x1bOD", "\x7f", "\x08"),
    "first": ("\x1b[H", "\x1bOH", "\x1b[1~", "\x1b[7~"),
    "last": ("\x1b[F", "\x1bOF", "\x1b[4~", "\x1b[8~"),
    "up": ("\x1b[A", "\x1bOA"),
    "down": ("\x1b[B", "\x1bOB"),
    "page_up": ("\x1b[5~",),
    "page_down": ("\x1b[6~",),
    "quit": ("q", "Q", "\x03", "\x1b"),
    "messages": ("m", "M"),
    "cut": ("c", "C"),
}
CUT_SHORT = 120  # characters of the cut text shown when the screen has no room for all of it
HELP = "→ Enter space: next  ← Bksp: back  Home End  PgUp PgDn ↑ ↓: scroll  q: quit"
HELP_CHAT = "→ Enter space: next  ← Bksp: back  m: messages  Home End  PgUp PgDn ↑ ↓  q: quit"  # a chat run's: m early, in view on a narrow screen
NARROW = "q: quit  → next  ← back  PgUp PgDn"  # a screen narrower than the keys: how to leave comes first
NARROW_CHAT = "q: quit  → next  ← back  m: messages"
WHEEL_AS_ARROWS = ("\x1b[?1007h", "\x1b[?1007l")  # xterm's alternate scroll: the wheel sends ↑ ↓


def facts_lines(frame: Frame, console: Console, width: int) -> list[Text]:
    """The three facts, each wrapped under its own text (a hanging indent)."""
    out = []
    for label, value in (("sent", frame.sent), ("added", f"{frame.author.value}, {len(frame.added):,} characters"), ("why", frame.why)):
        for i, piece in enumerate(Text(for_terminal(value)).wrap(console, max(1, width - 7), overflow="fold")):
            out.append(Text().append(f"{label:<6} " if i == 0 else " " * 7, style="bold").append_text(piece))
    return out


def heads(console: Console, frames: list[Frame], k: int, width: int, second: Text, stop_off: bool = False) -> list[Text]:
    """The header, the second line (the marks, or what m shows), the --no-stop line: wrapped, never cut off."""
    header = Text(f"Frame {k} of {len(frames) - 1}", style="bold").append("    ").append_text(legend().rich())
    lines = [header, second, *([Text(STOP_OFF, style="bold")] if stop_off else [])]
    return [piece for line in lines for piece in line.wrap(console, width)]


def frame_view(frames: list[Frame], k: int, console: Console, stop_off: bool = False) -> Text:
    """Frame k whole, as --frame prints it."""
    width = console.size.width
    lines, before, newest = BufferLines(frames, console, width).upto(k)
    top = heads(console, frames, k, width, marks_legend(True).rich(), stop_off)
    return Text("\n").join([*top, Text(), *lines[:before], *newest, Text(), *facts_lines(frames[k], console, width)])


def sent_view(console: Console, frames: list[Frame], k: int, sent: SentMessages) -> Text:
    """What `--frame K --messages` prints: the frame's header, then what its call was sent."""
    width = console.size.width
    lines = [*heads(console, frames, k, width, sent.heading_line(k)), Text()]
    return Text("\n").join([*lines, *sent.lines(k, console, width)])


class Screen:
    """What one screen shows: frame k scrolled by `top` (None: follow the newest part), or
    what its call was sent (m); the cut text whole or short (None: whole if it fits)."""

    def __init__(self, frames: list[Frame], console: Console, sent: SentMessages | None = None, stop_off: bool = False) -> None:
        self.frames, self.console, self.sent, self.stop_off = frames, console, sent, stop_off
        self.k, self.top, self.showing_sent = 0, None, False
        self.cut_whole: bool | None = None
        self._cut_shown_whole = True  # as last drawn
        self.said = ""  # one line in answer to a key that has nothing to show (m on a run without chat), until the next key
        self._follow = 0  # the top line that follows the newest part, as last drawn
        self._lines: BufferLines | None = None

    def buffer(self, width: int) -> BufferLines:
        if self._lines is None or self._lines.width != width:  # a resize: the rows wrap anew
            self._lines = BufferLines(self.frames, self.console, width)
        return self._lines

    def press(self, key: str, height: int) -> None:
        last, page = len(self.frames) - 1, max(1, height // 2)
        self.said = ""
        moves = {"next": self.k + 1, "back": self.k - 1, "first": 0, "last": last}
        scrolls = {"up": -1, "down": 1, "page_up": -page, "page_down": page}
        action = next((name for name, keys in KEYS.items() if key in keys), None)
        if action in moves:
            self.k, self.top, self.cut_whole = max(0, min(last, moves[action])), None, None
        elif action in scrolls:
            self.top = (self.top if self.top is not None else self._follow) + scrolls[action]
        elif action == "cut" and self.frames[self.k].cut and not self.showing_sent:
            self.cut_whole = not self._cut_shown_whole
        elif action == "messages" and (self.sent is None or not self.sent.chat):
            self.said = NOT_CHAT  # nothing to show: say so, and leave the buffer where it is
        elif action == "messages":
            self.showing_sent, self.top = not self.showing_sent, None

    def lines(self) -> list[Text]:
        """Exactly one screen: the header, the buffer's window, the facts (at most a third
        of the screen), the keys last."""
        width, height = self.console.size
        second = marks_legend(True).rich()
        if self.showing_sent:
            second = self.sent.heading_line(self.k)
        elif self.said:
            second = Text(self.said, style="bold")
        top_lines = heads(self.console, self.frames, self.k, width, second, self.stop_off)
        facts = facts_lines(self.frames[self.k], self.console, width)
        most = max(1, height // 3)
        if len(facts) > most:
            facts = [*facts[: most - 1], Text("…", style="dim")]
        room = max(1, height - len(top_lines) - 3 - len(facts))  # besides the heads, "above", blank, keys
        if self.showing_sent:  # the messages, their end in view: the newest message is last
            made, newest = self.sent.lines(self.k, self.console, width), []
            before = len(made)
        else:
            made, before, newest = self.buffer(width).upto(self.k, None, " (c: short)" if self.cut_whole else "")
            whole = self.cut_whole if self.cut_whole is not None else len(newest) <= room
            if not whole:  # no room for all of it beside the newest part: its start, and the key
                made, before, newest = self.buffer(width).upto(self.k, CUT_SHORT, " (c: show it whole)")
            self._cut_shown_whole = whole
        total = before + len(newest)
        # Follow the buffer's end (a tall part's start would hide it: at step 0, the question).
        self._follow = max(0, total - room)
        top = self._follow if self.top is None else max(0, min(self.top, self._follow))
        self.top = None if self.top is None else top
        end = min(total, top + room)
        if end < total and room > 1:
            end -= 1  # the last row says what is below
        window = [*made[top : min(end, before)], *newest[max(0, top - before) : max(0, end - before)]]
        if end < total:
            window.append(Text(f"↓ {total - end:,} lines below (PgDn ↓; → or ← follows the newest part)", style="dim"))
        above = Text(f"↑ {top:,} lines above (PgUp ↑)", style="dim") if top else Text()
        lines = [*top_lines, above, *window, Text(), *facts]
        keys = keys_line(width, self.sent is not None and self.sent.chat)
        lines += [Text()] * (height - 1 - len(lines)) + [Text(keys, style="dim")]
        for line in lines:
            line.truncate(width)
        return lines[:height]


def keys_line(width: int, chat: bool = False) -> str:
    """The keys, in full if they fit, else the few that matter, `q: quit` first."""
    full = HELP_CHAT if chat else HELP
    return full if len(full) <= width else NARROW_CHAT if chat else NARROW


def step_through(console: Console, frames: list[Frame], sent: SentMessages | None = None, stop_off: bool = False) -> None:
    """Full screen, keys as they come, until q; the terminal is restored however it ends."""
    try:
        import termios
        import tty
    except ImportError:
        raise HarnessError("harness step", "reads keys only on a POSIX terminal; use --frame K to print one frame") from None
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    screen_, reader = Screen(frames, console, sent, stop_off), KeyReader(fd)
    try:
        tty.setcbreak(fd)  # keys arrive at once and unechoed
        with console.screen(hide_cursor=True) as screen:
            console.file.write(WHEEL_AS_ARROWS[0])
            drawn = None
            while True:
                size = os.get_terminal_size(sys.stdout.fileno())  # the terminal's own, not COLUMNS/LINES
                state = (screen_.k, screen_.top, screen_.showing_sent, screen_.said, screen_.cut_whole, size)
                if drawn != state:  # a key moved, scrolled or toggled, or a resize
                    console.size = size
                    console.control(Control.home(), Control.clear())
                    screen.update(Text("\n").join(screen_.lines()))
                    drawn = state
                keys = reader.read(timeout=0.2)
                if keys is None:  # the terminal is gone
                    return
                for key in keys:  # every key of a burst counts
                    if key in KEYS["quit"]:
                        return
                    screen_.press(key, size.lines)
    finally:  # (a Ctrl-C ends the command as any other: interrupted, 130, the terminal as it was)
        console.file.write(WHEEL_AS_ARROWS[1])
        console.file.flush()
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)

