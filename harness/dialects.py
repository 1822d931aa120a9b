"""Dialects: how a completion says "run this tool" or "I am done", and how code answers.

A dialect owns its regexes and its stop sequences; nothing else in the harness parses
model text. Model output is untrusted input, so every pattern is anchored to a line,
bounded in length, kept to one line (a hallucinated `Observation:` on the next line can
never be swallowed into the arguments), and run with a timeout.

    default       seed 002:      Action: tool(args)       stop "Observation:"   Final Answer: ...
    react-paper   the paper's:   Action 1: Search[args]   stop "\\nObservation 1:"   Finish[answer]

Arguments, in both: empty; a JSON value (an object means keyword arguments); several
JSON values separated by commas (positional arguments); or else the bare text as one
string. Only the first Action line of a completion counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import regex

from harness.errors import HarnessError

_TIMEOUT = 0.25  # seconds; a match that takes longer is treated as no match
_ARGS_MAX = 100_000  # characters of arguments on one Action line (a file written whole fits)


@dataclass(frozen=True)
class Action:
    tool: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    raw: str = ""  # the arguments as the model wrote them


@dataclass(frozen=True)
class FinalAnswer:
    answer: str


@dataclass(frozen=True)
class NoAction:
    """The completion broke the format; `rule` says which rule, for the notice."""

    rule: str


Decision = Action | FinalAnswer | NoAction


def parse_args(raw: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """'' -> no args; '{"a": 1}' -> kwargs; '"x"' or '42' -> one arg; '1, "b"' -> two; else the text."""
    text = raw.strip()
    if not text:
        return (), {}
    for candidate, several in ((text, False), (f"[{text}]", True)):
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):  # json raises RecursionError on deep nesting
            continue
        if several:
            return tuple(value), {}
        return ((), value) if isinstance(value, dict) else ((value,), {})
    return (text,), {}


def _search(pattern: regex.Pattern[str], text: str) -> regex.Match[str] | None:
    try:
        return pattern.search(text, timeout=_TIMEOUT)
    except TimeoutError:
        return None


class Dialect:
    """One text protocol. Subclasses set the patterns and the few strings code writes."""

    name: str
    expected: str  # the exact format, quoted in notices
    _action: regex.Pattern[str]
    _action_line = regex.compile(r"^[ \t]*Action\b", regex.MULTILINE)  # a line that *tries* to be one
    _final: regex.Pattern[str] | None = None

    def stops(self, step: int) -> tuple[str, ...]:
        raise NotImplementedError

    def cue(self, step: int) -> str:
        """Text code writes just before model call `step` ('' for none)."""
        return ""

    def observation(self, step: int, result: str) -> str:
        raise NotImplementedError

    def notice(self, step: int, code: str, message: str) -> str:
        return f"Notice: [{code}] {message}\n"

    def signature(self, name: str, params: tuple[str, ...]) -> str:
        """How the prompt's tool list writes a call."""
        return f"{name}({', '.join(params)})"

    def parse(self, completion: str) -> Decision:
        if self._final is not None and (m := _search(self._final, completion)):
            return FinalAnswer(completion[m.end() :].strip())
        if m := _search(self._action, completion):
            args, kwargs = parse_args(m["args"])
            action = Action(m["tool"], args, kwargs, m["args"])
            return self._finish(action) or action
        if _search(self._action_line, completion):
            return NoAction(f"The Action line does not read {self.expected_action}")
        return NoAction("The reply has no Action line and no final answer")

    expected_action: str

    def _finish(self, action: Action) -> FinalAnswer | None:
        """A dialect whose final answer is a tool call (Finish[...]) turns it into one here."""
        return None


class DefaultDialect(Dialect):
    name = "default"
    expected_action = "`Action: tool_name(arguments)`"
    expected = "`Action: tool_name(arguments)` or `Final Answer: your answer`, on a line of its own"
    _final = regex.compile(r"^[ \t]*Final Answer:[ \t]*", regex.MULTILINE)
    _action = regex.compile(
        r"^[ \t]*Action:[ \t]*(?P<tool>[A-Za-z_][A-Za-z0-9_]{0,63})[ \t]*"
        rf"\((?P<args>[^\r\n]{{0,{_ARGS_MAX}}}?)\)[ \t]*\r?$",
        regex.MULTILINE,
    )

    def stops(self, step: int) -> tuple[str, ...]:
        return ("Observation:",)

    def observation(self, step: int, result: str) -> str:
        return f"Observation: {result}\n"


class ReactPaperDialect(Dialect):
    """The ReAct paper's numbered form. Code writes the `Thought k:` cue; the model goes on."""

    name = "react-paper"
    expected_action = "`Action k: Tool[argument]`"
    expected = "`Action k: Tool[argument]` on a line of its own, or `Action k: Finish[your answer]`"
    _action = regex.compile(
        r"^[ \t]*Action[ \t]*\d{1,6}[ \t]*:[ \t]*(?P<tool>[A-Za-z_][A-Za-z0-9_]{0,63})"
        rf"\[(?P<args>[^\r\n]{{0,{_ARGS_MAX}}}?)\][ \t]*\r?$",
        regex.MULTILINE,
    )

    def stops(self, step: int) -> tuple[str, ...]:
        return (f"\nObservation {step}:",)

    def cue(self, step: int) -> str:
        return f"Thought {step}:"

    def observation(self, step: int, result: str) -> str:
        return f"Observation {step}: {result}\n"

    def notice(self, step: int, code: str, message: str) -> str:
        return f"Notice {step}: [{code}] {message}\n"

    def signature(self, name: str, params: tuple[str, ...]) -> str:
        return f"{name}[{', '.join(params)}]"

    def _finish(self, action: Action) -> FinalAnswer | None:
        return FinalAnswer(action.raw.strip()) if action.tool == "Finish" else None


DIALECTS: dict[str, type[Dialect]] = {d.name: d for d in (DefaultDialect, ReactPaperDialect)}


def get_dialect(name: str, where: str = "dialect") -> Dialect:
    if name not in DIALECTS:
        raise HarnessError(where, f"unknown dialect {name!r} (known: {', '.join(DIALECTS)})")
    return DIALECTS[name]()
