"""Reading a completion as it streams: lanes and their gates.

Every line of a completion belongs to a lane: thinking (consecutive thought lines share
one), one lane per Action line, and the final answer (its marker line and the lines after
it). What reaches the user passes through the lane's gate:

    pending   text is buffered            (an Action line until it is complete)
    allow     the buffer is flushed, and later text goes straight through
    deny      the buffer is dropped, and so is everything after it in that lane

Thinking opens at once. An Action line is judged when it is complete, the answer lane as
soon as its marker is (harness.judge decides; harness.notices words the rejections). A
dialect may also require a prefix ("Thought:"): if the first line does not begin with it,
the read stops at that line's end, nothing reaches the user, and the line is quoted and
kept. The same object reads a finished text (`read`): the same record for any chunking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import notices
from harness.decisions import Action, Lane, Rejection, Round
from harness.judge import judge_action, judge_answer, judge_idle, trait_of

if TYPE_CHECKING:
    from harness.dialects import Dialect
    from harness.tools import Registry


class _Gate:
    """A lane being read: pending, it holds all it received; allowed, it has shown all of it;
    denied, nothing."""

    __slots__ = ("kind", "status", "parts")

    def __init__(self, kind: str, first: str, allowed: bool) -> None:
        self.kind = kind
        self.status = "allowed" if allowed else "pending"
        self.parts: list[str] = [first]  # everything the lane received (joined once, at the end)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def push(self, text: str) -> str:
        self.parts.append(text)
        return text if self.status == "allowed" else ""

    def lane(self, index: int) -> Lane:
        text, allowed = self.text, self.status == "allowed"
        return Lane(index, self.kind, "allowed" if allowed else "denied", len(text) if allowed else 0, text)


class Governor:
    def __init__(self, dialect: Dialect, tools: Registry | None = None, question: str = "") -> None:
        self.dialect, self.tools, self.question = dialect, tools, question
        self.lanes: list[_Gate] = []
        self.line = ""  # the start of the current line, while its kind cannot be told yet
        self.blanks: list[str] = []  # spaces and tabs that begin it, before anything else (see _take)
        self.lane: _Gate | None = None  # the lane the current line belongs to, once known
        self.answer: _Gate | None = None
        self.actions: list[tuple[int, Action, str]] = []  # (number, action, trait), accepted
        self.action_lines = 0
        self.rejections: list[Rejection] = []
        self.fed: list[str] = []  # every chunk, as it came (`text` joins them once)
        self.read_chars = 0  # characters fed so far
        self.shown_end = 0  # position just after the last character the user saw
        self._prefix = dialect.required_prefix or ""
        self._head: str | None = "" if self._prefix else None  # held until the prefix is confirmed
        self.prefix_rejected, self.rejected = False, ""  # then the read ends; `rejected`: the line that ruled it out, kept

    def feed(self, chunk: str) -> str:
        """Take a chunk of the completion; return the text that now reaches the user."""
        self.fed.append(chunk)
        if self.prefix_rejected:
            return ""
        if self._head is not None:
            self._head = self._head[: len(self._prefix)] + chunk  # (what decides is its start: a long first line is not copied again and again)
            if not self._head.startswith(self._prefix):
                if "\n" in chunk:  # its first line rules the prefix out: kept whole (no chunk before held a newline)
                    self._reject_prefix(self.text)
                return ""  # neither the prefix yet nor a whole first line: wait
            chunk, self._head = self._head, None
        *lines, rest = chunk.split("\n")  # line by line: each piece ends with its newline, but the last
        shown = "".join([self._take(line + "\n", True) for line in lines])
        return shown + self._take(rest, False) if rest else shown

    @property
    def text(self) -> str:
        """All it was fed: the completion as read so far."""
        return "".join(self.fed)

    def finish(self) -> str:
        """The stream has ended: judge the last line and anything still pending."""
        if self.prefix_rejected:
            return ""
        if self._head is not None:  # ended while it could still be the prefix
            self._reject_prefix(self.text)
            return ""
        return self._end_line()

    def result(self) -> Round:
        lanes = tuple(gate.lane(i) for i, gate in enumerate(self.lanes))
        rejections = tuple(self.rejections)
        opened = self.answer is not None and self.answer.status == "allowed"
        if not self.actions and self.answer is None and not rejections:
            rejections = (notices.no_action(self.dialect.expected_action),)
        return Round(
            lanes=lanes,
            actions=tuple((n, a) for n, a, _ in self.actions),
            answer=self.dialect.answer_text(self.answer.text) if opened else None,
            answer_streamed=opened and self.answer.text != "",
            rejections=rejections,
            shown="".join(lane.text for lane in lanes if lane.status == "allowed"),  # each allowed lane, whole
            prefix_rejected=self.prefix_rejected,
        )

    def _take(self, piece: str, ended: bool) -> str:
        """Add a piece that ends at most with one newline (`ended`: it does)."""
        self.read_chars += len(piece)
        lane = self.lane
        if lane is None:
            if not self.line and not ended and not piece.strip(" \t"):
                # Only blanks so far: the kind cannot be told yet. Keep them as pieces, so that
                # 400,000 spaces cost one join, not one copy and one lstrip per chunk.
                self.blanks.append(piece)
                return ""
            if self.blanks:
                piece, self.blanks = "".join(self.blanks) + piece, []
            self.line += piece
            kind = self.dialect.line_kind(self.line, ended)
            if kind is None:
                return ""
            if ended and kind == "action":  # a whole Action line: judged at once, without a gate
                line, self.line = self.line, ""
                return self._judge(line)
            out = self._open(kind, self.line)
            self.line = ""
        else:
            out = self._seen(lane.push(piece))
        return out + self._end_line() if ended else out

    def _seen(self, out: str) -> str:
        """Text a gate let through: the user has now seen up to here."""
        if out:
            self.shown_end = self.read_chars
        return out

    def _open(self, kind: str, text: str) -> str:
        """The current line's kind is known: give it (and what it held) to its lane."""
        if kind != "action" and self.answer is not None:
            self.lane = self.answer  # lines after the final answer belong to it
        elif kind == "thinking" and self.lanes and self.lanes[-1].kind == "thinking":
            self.lane = self.lanes[-1]  # consecutive thought lines share one lane
        else:
            self.lane = gate = _Gate(kind, text, kind == "thinking")  # thinking opens at once
            self.lanes.append(gate)
            if kind == "answer":
                return self._open_answer(gate)
            return self._seen(text) if kind == "thinking" else ""
        return self._seen(self.lane.push(text))

    def _open_answer(self, gate: _Gate) -> str:
        self.answer = gate
        rejection = judge_answer(self.dialect, self.actions)
        gate.status = "allowed" if rejection is None else "denied"
        if rejection is None:
            return self._seen(gate.text)  # what it held: all it received
        self.rejections.append(rejection)
        return ""

    def _end_line(self) -> str:
        """The current line is complete (a newline, or the end of the completion)."""
        out = ""
        if self.blanks:  # the completion ended on a line of blanks
            self.line, self.blanks = "".join(self.blanks), []
        if self.lane is None and self.line:
            out += self._open(self.dialect.line_kind(self.line, complete=True), self.line)
            self.line = ""
        gate, self.lane = self.lane, None
        if gate is not None and gate.kind == "action" and gate.status == "pending":
            out += self._judge(gate.text, gate)
        return out

    def _judge(self, line: str, gate: _Gate | None = None) -> str:
        """A complete Action line, in its lane (`gate`) or a new one; returns what the user sees."""
        if gate is None:
            self.lanes.append(gate := _Gate("action", line, False))
        self.action_lines += 1
        number = self.action_lines
        action = None
        # A line that cannot run (the reply's actions are used up, or its answer came first)
        # is judged by its tool alone: its arguments are not worth reading.
        if len(self.actions) >= self.dialect.max_actions or self.answer is not None:
            tool = self.dialect.read_tool(line)
            finish = tool is not None and self.answer is None and self.dialect.is_finish(tool)
            rejection = None if finish else judge_idle(self.dialect, self.tools, number, tool, line, self.answer is not None)
        else:
            action = self.dialect.read_action(line)
            finish = action is not None and self.dialect.is_finish(action.tool)
            rejection = None if finish else judge_action(self.dialect, self.tools, self.actions, number, action, line, self.question)
        if finish:  # Finish[...]: the final answer, written as an action
            self.action_lines -= 1
            gate.kind = "answer"
            return self._open_answer(gate)
        if rejection is not None:
            self.rejections.append(rejection)
            gate.status = "denied"
            return ""
        self.actions.append((number, action, trait_of(self.tools, action.tool)))
        gate.status = "allowed"
        return self._seen(line)

    def _reject_prefix(self, head: str) -> None:
        line = head[: head.find("\n") + 1] or head  # its first line (a redaction pattern sees it whole again)
        self.prefix_rejected, self.rejected = True, line
        self.rejections.append(notices.prefix_rejected(self._prefix, line, self.dialect.expected))


def read(dialect: Dialect, completion: str, tools: Registry | None = None) -> Round:
    """The decisions on a finished completion (the same reader as the live one)."""
    governor = Governor(dialect, tools)
    governor.feed(completion)
    governor.finish()
    return governor.result()
