"""Judging a complete Action line, and whether the final answer may open.

Each judge returns None when the candidate passes, else the Rejection (worded in
harness.notices); its checks come in the order a user would fix them in.

Strategy traits: may two actions of one completion run in the same round?
Every tool has a trait, set where the tool is defined and overridable per scenario:

    exploration    fetches data a later step will read (search, read_file, check_quota)
    exploitation   consumes data already visible (write a report, patch a file)
    neutral        neither (a clock, a calculator, finish)
    unknown        nobody said

The second action of a round must not depend on the first's result, which nobody has
seen yet. A neutral action depends on nothing, so it may always follow. An action of
unknown trait might depend on anything, so it may not. Otherwise the second may follow
only a first whose result it cannot be waiting for: an exploitation or neutral one.

The final answer may open only after neutral actions: after anything else the answer
could contradict a result that is still on its way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from harness import notices
from harness.decisions import Action, Rejection
from harness.arguments import ARGS_MAX, Written, split_call

if TYPE_CHECKING:
    from harness.dialects import Dialect
    from harness.tools import Registry, Tool

Accepted = Sequence[tuple[int, Action, str]]  # (Action line number, action, its trait), in order


def compatible(first: str, second: str) -> bool:
    if second == "neutral":
        return True
    if second == "unknown":
        return False
    return first in ("exploitation", "neutral")


def answer_may_open(accepted: Iterable[str]) -> bool:
    return all(trait == "neutral" for trait in accepted)


def trait_of(tools: Registry | None, tool: str) -> str:
    return tools[tool].trait if tools is not None else "unknown"


def judge_action(dialect: Dialect, tools: Registry | None, accepted: Accepted, number: int, action: Action | None, line: str, question: str = "") -> Rejection | None:
    """It must parse, name a known tool, fit the reply's actions, call one tool, and not depend on an unseen result."""
    if action is None:
        return why_not(dialect, tools, number, line)
    tool = None if tools is None else tools.get(action.tool)  # (looked up once for every check)
    if tools is not None and tool is None:
        return notices.unknown_tool(number, action.tool, tools.names)
    if len(accepted) >= dialect.max_actions:
        return notices.too_many_actions(number, action.tool, dialect.max_actions)
    if tool is not None and (rejection := misused(dialect, tools, number, action) or copied(dialect, tool, number, action, question)):
        return rejection
    trait = trait_of(tools, action.tool)
    for first, first_action, first_trait in accepted:
        if not compatible(first_trait, trait):
            return notices.incompatible_action(number, action.tool, trait, first, first_action.tool, first_trait)
    return None


def judge_idle(dialect: Dialect, tools: Registry | None, number: int, tool: str | None, line: str, answered: bool) -> Rejection:
    """An Action line that cannot run (its reply's actions are used up, or its answer came first), by its tool alone."""
    if answered:
        return notices.action_after_answer(number, tool)
    if tool is None:
        return why_not(dialect, tools, number, line)
    if tools is not None and tool not in tools:
        return notices.unknown_tool(number, tool, tools.names)
    return notices.too_many_actions(number, tool, dialect.max_actions)


def judge_answer(dialect: Dialect, accepted: Accepted) -> Rejection | None:
    if not dialect.answer_needs_neutral or answer_may_open(trait for _, _, trait in accepted):
        return None
    return notices.answer_withheld(accepted)


# --- what is wrong with a call, said so that the model can fix it ------------------------

_NAME = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]{0,63})[ \t]*[(\[]")
_LOOKED_AT = 50  # names followed by a bracket examined in one argument text
_WRAPPED = r"([A-Za-z_][A-Za-z0-9_]{0,63})[ \t]*\((.{0,1000})\)"  # `country("Freedonia")` (compiled when first matched)


def bare(action: Action) -> bool:
    """Its arguments reached the tool as the text the model wrote (no JSON, no literals)."""
    return not action.kwargs and action.args == (action.raw.strip(),)


def inner_call(dialect: Dialect, tools: Registry, text: str) -> tuple[str, str] | None:
    """(tool, its call as written) for the first known tool called inside `text`."""
    if "(" not in text and "[" not in text:
        return None  # no bracket, no call (and 100,000 characters are not searched for names)
    for i, m in enumerate(_NAME.finditer(text)):
        if i == _LOOKED_AT:
            break
        if m[1] in tools:
            args = split_call(text[m.end() :], dialect.close)
            inner = args[0].strip() if args is not None else "..."
            return m[1], dialect.signature(m[1], (inner[: notices.PREVIEW],))
    return None


def why_not(dialect: Dialect, tools: Registry | None, number: int, line: str) -> Rejection:
    """An Action line that does not parse: a call inside a call, text after the call, or else."""
    loose = dialect.loose_call(line) if len(line) <= ARGS_MAX else None
    if loose is not None:
        tool, rest = loose
        if tools is not None and (inner := inner_call(dialect, tools, rest)):
            return notices.nested_call(number, tool, *inner)
        split = split_call(rest, dialect.close)
        if split is not None and split[1].strip():
            return notices.after_call(number, tool, split[0].strip(), split[1], dialect.close)
    example = None  # a call to copy: of the tool the line names (`Use the capital(country) tool`), or the first tool's
    if tools is not None and len(line) <= ARGS_MAX:
        named = inner_call(dialect, tools, line)
        tool = tools[named[0]] if named else next((t for t in tools if t.example), None)
        example = example_call(dialect, tool) if tool is not None else None
    return notices.tool_call_invalid(number, line, dialect.expected_action, dialect.expected, ARGS_MAX, example)


def misused(dialect: Dialect, tools: Registry, number: int, action: Action) -> Rejection | None:
    """A call that cannot be what the model meant: another tool written inside its arguments
    (looked for only in bare text and in expressions given by keyword: a JSON or quoted
    string may hold any text, and a file's content often does)."""
    if bare(action):
        inner = inner_call(dialect, tools, action.raw)
        if inner and (early := split_call(action.raw, dialect.close)) is not None:  # `f('a') + g('b')`: f('a') first
            first = dialect.signature(action.tool, (early[0].strip()[: notices.PREVIEW],))
            return notices.two_calls(number, action.tool, first, inner[0])  # inner[0]: g, the second call's tool
    elif not action.kwargs:  # JSON or literal values only: any text they hold is quoted
        return None
    else:
        written = (v for v in action.kwargs.values() if isinstance(v, Written))
        inner = next(filter(None, (inner_call(dialect, tools, v) for v in written)), None)
    return notices.nested_call(number, action.tool, *inner) if inner else None


_SPACE = r"[^\S\x1c-\x1f]+"  # (compiled when first matched)


def _plain(text: object) -> str:
    """A value as compared with an example: no spaces, no surrounding quotes, any case."""
    return re.sub(_SPACE, "", str(text)).strip("'\"`").casefold()


def copied(dialect: Dialect, tool: Tool, number: int, action: Action, question: str) -> Rejection | None:
    """The tool list's example call, copied (however it is written) for a question that never
    mentions its value: `calculator((2 + 3) * 4)` for the price of four lamps. A real example
    (a canned tool's first key) runs: looking each key up may be the task."""
    example = tool.example
    if example is None or tool.example_is_real:
        return None  # (the usual tool: nothing to copy)
    values = [*action.args, *action.kwargs.values()]
    if len(values) != 1 or len(str(values[0])) > 2 * len(example) + 8:
        return None  # (a long argument is no copy: it is not rewritten to be compared)
    if (value := _plain(values[0])) != _plain(example) or value in re.sub(_SPACE, "", question).casefold():
        return None
    return notices.copied_example(number, action.tool, dialect.signature(action.tool, (example,)))


def why_failed(dialect: Dialect, tools: Registry, number: int, action: Action) -> Rejection | None:
    """A call that failed with a parameter's name where its value belongs (`calculator(expression)`)
    or wrapped around it (`capital(country("Freedonia"))`); only after a failure, since a
    value equal to a parameter's name may be right (a file's content)."""
    tool = tools[action.tool]
    names = {p.casefold() for p in tool.params}
    if bare(action) and (m := re.fullmatch(_WRAPPED, action.raw.strip())) and m[1].casefold() in names:
        return notices.placeholder(number, tool.name, m[1], dialect.signature(tool.name, (m[2].strip()[: notices.PREVIEW],)))
    given = [*zip(tool.params, action.args), *action.kwargs.items()]
    for param, value in given:
        if isinstance(value, str) and value.strip(" <>{}[]'\"`").casefold() == param.casefold():
            return notices.placeholder(number, tool.name, param, example_call(dialect, tool))
    return None


def example_call(dialect: Dialect, tool: Tool) -> str:
    """A call of `tool` to copy, written the dialect's way: its example, else `name(...)`."""
    return dialect.signature(tool.name, (tool.example,)) if tool.example else f"{tool.name}(...)"
