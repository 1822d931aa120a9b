"""Reading a completion as it streams: lanes, gates, and the decisions of one round.

Every line of a completion belongs to a lane: thinking (consecutive thought lines share
one), one lane per Action line, and the final answer (its marker line and the lines after
it). What reaches the user passes through the lane's gate:

    pending   text is buffered            (an Action line until it is complete)
    allow     the buffer is flushed, and later text goes straight through
    deny      the buffer is dropped, and so is everything after it in that lane

Thinking opens at once. An Action line is judged when it is complete: it must parse, name
a known tool, stay within the dialect's number of actions, and be compatible with the
actions accepted before it (harness.traits). The answer lane is judged as soon as its
marker is complete: in a dialect that asks for it, only neutral actions may come before.
A dialect may also require a prefix ("Thought:"): the first text that rules it out stops
the read, and nothing reaches the user.

The same object reads the finished text (`read`), so the live decisions and the
decisions on the whole completion cannot disagree: that is the rule, and a property test
checks it for any chunking.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.traits import answer_may_open, compatible
from harness.transcript import split_lines

if TYPE_CHECKING:
    from harness.dialects import Action, Dialect
    from harness.tools import Registry

PREVIEW = 80  # characters of a rejected generation quoted back in its notice


@dataclass(frozen=True)
class Rejection:
    """A candidate that did not pass; it becomes one self-sufficient notice."""

    code: str  # stable: protocol_violation.no_action, gate.incompatible_action, ...
    message: str
    index: int | None = None  # the Action line's number in the completion, from 1
    tool: str | None = None
    violations: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lane:
    index: int  # order of appearance in the completion, from 0
    kind: str  # thinking | action | answer
    status: str  # allowed | denied
    emitted_chars: int  # what the user saw of it (a denied lane: 0)
    text: str  # all the model wrote in it, shown or not


@dataclass(frozen=True)
class Round:
    """What one completion decided. Equal for any chunking of the same text."""

    lanes: tuple[Lane, ...] = ()
    actions: tuple[tuple[int, Action], ...] = ()  # (Action line number, action), accepted, in order
    answer: str | None = None  # the final answer, if its lane opened
    answer_streamed: bool = False  # whether any of it reached the user
    rejections: tuple[Rejection, ...] = ()
    shown: str = ""  # all that reached the user, in order
    prefix_rejected: bool = False


@dataclass
class _Gate:
    kind: str
    pending: list[str] = field(default_factory=list)
    status: str = "pending"
    emitted: int = 0
    text: str = ""  # everything the lane received

    def push(self, text: str) -> str:
        self.text += text
        if self.status == "allowed":
            self.emitted += len(text)
            return text
        if self.status == "pending":
            self.pending.append(text)
        return ""

    def allow(self) -> str:
        self.status, out, self.pending = "allowed", "".join(self.pending), []
        self.emitted += len(out)
        return out

    def deny(self) -> None:
        self.status, self.pending = "denied", []


class Governor:
    def __init__(self, dialect: Dialect, tools: Registry | None = None) -> None:
        self.dialect, self.tools = dialect, tools
        self.lanes: list[_Gate] = []
        self.line = ""  # the current line, not yet given to a lane
        self.lane: _Gate | None = None  # the lane the current line belongs to, once known
        self.answer: _Gate | None = None
        self.actions: list[tuple[int, Action, str]] = []  # (number, action, trait)
        self.action_lines = 0
        self.rejections: list[Rejection] = []
        self.shown: list[str] = []
        self.read_chars = 0  # characters fed so far
        self.shown_end = 0  # position just after the last character the user saw
        self._prefix = dialect.required_prefix or ""
        self._head = ""  # held until the required prefix is confirmed
        self.prefix_rejected = False

    @property
    def stopped(self) -> bool:
        """True once the read must end (the prefix was ruled out)."""
        return self.prefix_rejected

    # --- streaming ----------------------------------------------------------------

    def feed(self, chunk: str) -> str:
        """Take a chunk of the completion; return the text that now reaches the user."""
        if self.prefix_rejected:
            return ""
        if self._prefix and self._head is not None:
            self._head += chunk
            if self._prefix.startswith(self._head):
                return ""  # could still become the prefix: wait
            if not self._head.startswith(self._prefix):
                self._reject_prefix(self._head)
                return ""
            chunk, self._head = self._head, None
        return self._show("".join(self._take(piece) for piece in split_lines(chunk)))

    def finish(self) -> str:
        """The stream has ended: judge the last line and anything still pending."""
        if self.prefix_rejected:
            return ""
        if self._prefix and self._head is not None:  # ended while it could still be the prefix
            self._reject_prefix(self._head)
            return ""
        return self._show(self._end_line())

    def read(self, text: str) -> Round:
        """The whole completion at once: the same decisions, by the same code."""
        self.feed(text)
        self.finish()
        return self.result()

    def result(self) -> Round:
        lanes = tuple(
            Lane(i, g.kind, "allowed" if g.status == "allowed" else "denied", g.emitted, g.text)
            for i, g in enumerate(self.lanes)
        )
        rejections = list(self.rejections)
        answer = None
        if self.answer is not None and self.answer.status == "allowed":
            answer = self.dialect.answer_text(self.answer.text)
        if not self.actions and self.answer is None and not rejections:
            d = self.dialect
            rejections.append(
                Rejection(
                    "protocol_violation.no_action",
                    f"The reply has no Action line and no final answer. Write {d.expected}.",
                    violations=("no Action line", "no final answer"),
                )
            )
        return Round(
            lanes=lanes,
            actions=tuple((n, a) for n, a, _ in self.actions),
            answer=answer,
            answer_streamed=self.answer is not None and self.answer.emitted > 0,
            rejections=tuple(rejections),
            shown="".join(self.shown),
            prefix_rejected=self.prefix_rejected,
        )

    # --- lines and lanes ----------------------------------------------------------

    def _show(self, text: str) -> str:
        if text:
            self.shown.append(text)
        return text

    def _take(self, piece: str) -> str:
        """Add a piece that ends at most with one newline."""
        self.read_chars += len(piece)
        out = ""
        ended = piece.endswith("\n")
        if self.lane is None:
            self.line += piece
            kind = self.dialect.line_kind(self.line, complete=ended)
            if kind is None:
                return ""
            out += self._open(kind, self.line)
            self.line = ""
        else:
            out += self._push(self.lane, piece)
        if ended:
            out += self._end_line()
        return out

    def _seen(self, out: str) -> str:
        """Text a gate let through: the user has now seen up to here."""
        if out:
            self.shown_end = self.read_chars
        return out

    def _push(self, gate: _Gate, text: str) -> str:
        return self._seen(gate.push(text))

    def _trait(self, tool: str) -> str:
        return self.tools[tool].trait if self.tools is not None else "unknown"

    def _open(self, kind: str, text: str) -> str:
        """The current line's kind is known: give it (and what it held) to its lane."""
        if kind != "action" and self.answer is not None:
            self.lane = self.answer  # lines after the final answer belong to it
            return self._push(self.lane, text)
        if kind == "thinking" and self.lanes and self.lanes[-1].kind == "thinking":
            self.lane = self.lanes[-1]  # consecutive thought lines share one lane
            return self._push(self.lane, text)
        gate = _Gate(kind)
        self.lanes.append(gate)
        self.lane = gate
        out = self._push(gate, text)
        if kind == "thinking":
            out += self._allow(gate)
        elif kind == "answer":
            out += self._open_answer(gate)
        return out

    def _open_answer(self, gate: _Gate) -> str:
        self.answer = gate
        if not self.dialect.answer_needs_neutral or answer_may_open(t for _, _, t in self.actions):
            return self._allow(gate)
        gate.deny()
        self.rejections.append(
            Rejection(
                "gate.answer_withheld",
                "Your final answer was not shown and the run goes on: it came after an action whose result "
                "you have not seen yet. Read the observations, then write the final answer in a reply of its own.",
                violations=tuple(f"action {n} ({a.tool}) is {trait}, not neutral" for n, a, trait in self.actions),
            )
        )
        return ""

    def _allow(self, gate: _Gate) -> str:
        return self._seen(gate.allow())

    def _end_line(self) -> str:
        """The current line is complete (a newline, or the end of the completion)."""
        out = ""
        if self.lane is None and self.line:
            out += self._open(self.dialect.line_kind(self.line, complete=True), self.line)
            self.line = ""
        gate, self.lane = self.lane, None
        if gate is not None and gate.kind == "action" and gate.status == "pending":
            out += self._judge_action(gate)
        return out

    def _judge_action(self, gate: _Gate) -> str:
        self.action_lines += 1
        number, d = self.action_lines, self.dialect
        action = d.read_action(gate.text)
        if action is not None and d.is_finish(action) and self.answer is None:
            gate.kind = "answer"  # Finish[...] is the final answer, written as an action
            self.action_lines -= 1
            return self._open_answer(gate)
        problem = self._action_problem(number, action, gate.text)
        if problem is not None:
            gate.deny()
            self.rejections.append(problem)
            return ""
        self.actions.append((number, action, self._trait(action.tool)))
        return self._allow(gate)

    def _action_problem(self, number: int, action: Action | None, line: str) -> Rejection | None:
        d = self.dialect
        if self.answer is not None:
            return Rejection(
                "protocol_violation.action_after_answer",
                "An Action line came after the final answer; it did not run. The final answer ends the run.",
                number,
                action.tool if action else None,
                ("Action line after the final answer",),
            )
        if action is None:
            return Rejection(
                "protocol_violation.tool_call_invalid",
                f"Action line {number} does not read {d.expected_action}; it did not run. Write {d.expected}.",
                number,
                None,
                (f"not of the form {d.expected_action}: {line.strip()[:PREVIEW]!r}",),
            )
        if self.tools is not None and action.tool not in self.tools:
            valid = ", ".join(self.tools.names)
            return Rejection(
                "protocol_violation.unknown_tool",
                f"There is no tool named {action.tool!r}; it did not run. Valid tools: {valid}.",
                number,
                action.tool,
                (f"unknown tool {action.tool!r}",),
            )
        if len(self.actions) >= d.max_actions:
            return Rejection(
                "protocol_violation.too_many_actions",
                f"Only {_count(d.max_actions)} per reply can run; action {number} did not run. "
                "Ask for it again after you have read the observations.",
                number,
                action.tool,
                (f"more than {_count(d.max_actions)} in one reply",),
            )
        trait = self._trait(action.tool)
        clashes = [(n, a, t) for n, a, t in self.actions if not compatible(t, trait)]
        if clashes:
            n, first, first_trait = clashes[0]
            return Rejection(
                "gate.incompatible_action",
                f"Action {number} ({action.tool}, {trait}) could depend on the result of action {n} "
                f"({first.tool}, {first_trait}), which you have not seen yet; it did not run. "
                "Ask for it again after you have read the observation.",
                number,
                action.tool,
                (f"{trait} action after {first_trait} action {n}",),
            )
        return None

    def _reject_prefix(self, head: str) -> None:
        self.prefix_rejected = True
        preview = head[:PREVIEW] + ("…" if len(head) > PREVIEW else "")
        self.rejections.append(
            Rejection(
                "prefix.rejected",
                f"A reply must begin with {self._prefix!r}; this one began {preview!r} and was stopped there. "
                f"Nothing of it was shown or run. Begin with {self._prefix!r}, then write {self.dialect.expected}.",
                violations=(f"does not begin with {self._prefix!r}",),
            )
        )


def _count(actions: int) -> str:
    return "one Action line" if actions == 1 else f"{actions} Action lines"
