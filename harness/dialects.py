"""Dialects: how a completion says "run this tool" or "I am done", and how code answers.

A dialect owns its regexes and its stop sequences; nothing else in the harness parses
model text. Model output is untrusted input, so every pattern is anchored to a line,
bounded in length and kept to one line (a hallucinated `Observation:` on the next line can
never be swallowed into the arguments). Linear in the line whatever it holds, a pattern
needs no timeout.

    default       seed 002:      Action: tool(args)       stop "Observation:"       Final Answer: ...
    react-paper   the paper's:   Action 1: Search[args]   stop "\\nObservation 1:"   Finish[answer]
    governed      seed 000:      like default, but up to two Action lines, tool traits
                                 decide which may share a round, the final answer opens
                                 only after neutral actions, and a reply must begin
                                 with "Thought:"

The arguments inside the brackets are read by harness.arguments (JSON, Python-style
literals, or the bare text). A line is an Action line if it begins (after spaces) with
the word `Action`, and the final answer's line if it begins with `Final Answer:`; the
rest is thinking.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.arguments import ARGS_MAX, parse_args
from harness.decisions import Action
from harness.errors import HarnessError


def _starts_with(s: str, word: str, boundary: bool, complete: bool) -> bool | None:
    """Does `s` (a line, its leading blanks stripped) begin with `word`? None: cannot tell yet."""
    if len(s) > len(word):
        return s.startswith(word) and not (boundary and (s[len(word)].isalnum() or s[len(word)] == "_"))
    if s == word:
        return True if complete or not boundary else None  # "Action" might become "Actions"
    if word.startswith(s):
        return False if complete else None
    return False


class Dialect:
    """One text protocol. Subclasses set the patterns and the few strings code writes."""

    name: str
    expected: str  # the exact format, quoted in notices
    expected_action: str
    _action: re.Pattern[str]  # exactly the groups (tool, args)
    _markers: tuple[tuple[str, str, bool], ...] = (("answer", "Final Answer:", False), ("action", "Action", True))
    close = ")"  # the bracket that ends a call's arguments
    _loose = re.compile(
        r"^[ \t]*Action[ \t]*(?:[0-9]{1,6}[ \t]*)?:[ \t]*(?P<tool>[A-Za-z_][A-Za-z0-9_]{0,63})[ \t]*[(\[]"
        rf"(?P<rest>[^\r\n]{{0,{ARGS_MAX}}})",
    )
    max_actions = 1  # Action lines that may run from one completion
    answer_needs_neutral = False  # the answer opens only after neutral actions
    required_prefix: str | None = None  # a completion must begin with this

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        action = cls.__dict__.get("_action")
        if action is not None and (action.groups, dict(action.groupindex)) != (2, {"tool": 1, "args": 2}):
            raise TypeError(f"{cls.__name__}._action must have exactly the groups (tool, args), in that order")

    def stops(self, step: int) -> tuple[str, ...]:
        raise NotImplementedError

    def cue(self, step: int) -> str:
        """Text code writes just before model call `step` ('' for none)."""
        return ""

    def observation(self, step: int, number: int, result: str) -> str:
        """What code splices in for the result of Action line `number` of step `step`."""
        raise NotImplementedError

    def notice(self, step: int, payload: dict[str, Any]) -> str:
        """A notice as the model reads it: the plain sentence (the fields go to the events)."""
        return f"Notice: {payload['message']}\n"

    def signature(self, name: str, params: tuple[str, ...]) -> str:
        """How the prompt's tool list writes a call."""
        return f"{name}({', '.join(params)})"

    def line_kind(self, line: str, complete: bool) -> str | None:
        """'action', 'answer' or 'thinking' for a line; None while it cannot be told yet."""
        s = line.lstrip(" \t")
        for kind, word, boundary in self._markers:
            verdict = _starts_with(s, word, boundary, complete)
            if verdict is None:
                return None
            if verdict:
                return kind
        return "thinking"

    def loose_call(self, line: str) -> tuple[str, str] | None:
        """(tool, text after the opening bracket) of an Action line that names a tool, parsed or not."""
        m = self._loose.match(line)
        return (m["tool"], m["rest"]) if m else None

    def read_action(self, line: str) -> Action | None:
        """The call on an Action line."""
        if m := self._action.match(line):
            tool, raw = m.groups()  # (tool, args): the only groups of every _action pattern
            return Action(tool, *parse_args(raw), raw)
        return None

    def read_tool(self, line: str) -> str | None:
        """The tool of a call on an Action line that will not run: its arguments are not read."""
        m = self._action.match(line)
        return m["tool"] if m else None

    def is_finish(self, tool: str) -> bool:
        """A dialect whose final answer is written as an action (Finish[...]) says so here."""
        return False

    def answer_text(self, lane: str) -> str:
        """The final answer, from the text of its lane."""
        marker = lane.find("Final Answer:")
        return lane[marker + len("Final Answer:") :].strip()


class DefaultDialect(Dialect):
    name = "default"
    expected_action = "`Action: tool_name(arguments)`"
    expected = "`Action: tool_name(arguments)` or `Final Answer: your answer`, on a line of its own"
    _action = re.compile(
        r"^[ \t]*Action:[ \t]*(?P<tool>[A-Za-z_][A-Za-z0-9_]{0,63})[ \t]*"
        rf"\((?P<args>[^\r\n]{{0,{ARGS_MAX}}}?)\)[ \t]*\r?$",
        re.MULTILINE,
    )

    def stops(self, step: int) -> tuple[str, ...]:
        return ("Observation:",)

    def observation(self, step: int, number: int, result: str) -> str:
        return f"Observation: {result}\n"


class ReactPaperDialect(Dialect):
    """The ReAct paper's numbered form. Code writes the `Thought k:` cue; the model goes on."""

    name = "react-paper"
    close = "]"
    expected_action = "`Action k: Tool[argument]`"
    expected = "`Action k: Tool[argument]` on a line of its own, or `Action k: Finish[your answer]`"
    _markers = (("action", "Action", True),)
    _action = re.compile(
        r"^[ \t]*Action[ \t]*[0-9]{1,6}[ \t]*:[ \t]*(?P<tool>[A-Za-z_][A-Za-z0-9_]{0,63})"
        rf"\[(?P<args>[^\r\n]{{0,{ARGS_MAX}}}?)\][ \t]*\r?$",
        re.MULTILINE,
    )

    def stops(self, step: int) -> tuple[str, ...]:
        return (f"\nObservation {step}:",)

    def cue(self, step: int) -> str:
        return f"Thought {step}:"

    def observation(self, step: int, number: int, result: str) -> str:
        return f"Observation {step}: {result}\n"

    def notice(self, step: int, payload: dict[str, Any]) -> str:
        return f"Notice {step}: {payload['message']}\n"

    def signature(self, name: str, params: tuple[str, ...]) -> str:
        return f"{name}[{', '.join(params)}]"

    def is_finish(self, tool: str) -> bool:
        return tool == "Finish"

    def answer_text(self, lane: str) -> str:
        action = self.read_action(lane)
        return action.raw.strip() if action else ""


class GovernedDialect(DefaultDialect):
    """Seed 000's self-governing round, in text: up to two actions, gated by their traits."""

    name = "governed"
    expected = (
        "`Thought: ...` first, then up to two lines `Action: tool_name(arguments)`, "
        "or `Final Answer: your answer` on a line of its own"
    )
    max_actions = 2
    answer_needs_neutral = True
    required_prefix = "Thought:"

    def stops(self, step: int) -> tuple[str, ...]:
        return ("\nObservation",)

    def observation(self, step: int, number: int, result: str) -> str:
        return f"Observation {number}: {result}\n"  # numbered like the Action lines it answers

    def notice(self, step: int, payload: dict[str, Any]) -> str:
        """Seed 000's notice: the whole structured diagnosis, inline, as JSON."""
        return f"Notice: {json.dumps(payload, ensure_ascii=False)}\n"


DIALECTS: dict[str, type[Dialect]] = {d.name: d for d in (DefaultDialect, ReactPaperDialect, GovernedDialect)}


def get_dialect(name: str, where: str = "dialect") -> Dialect:
    if name not in DIALECTS:
        raise HarnessError(where, f"unknown dialect {name!r} (known: {', '.join(DIALECTS)})")
    return DIALECTS[name]()
