"""Judging a complete Action line, and whether the final answer may open.

    judge_action   must parse, name a known tool, stay within the dialect's number of
                   actions per reply, and not depend on an accepted action's unseen result
    judge_answer   in a dialect that asks for it, only neutral actions may come before

Each returns None when the candidate passes, else the Rejection (worded in
harness.notices). The order of the checks is the order a user would fix them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness import notices
from harness.decisions import Action, Rejection
from harness.dialects import ARGS_MAX
from harness.traits import answer_may_open, compatible

if TYPE_CHECKING:
    from harness.dialects import Dialect
    from harness.tools import Registry

Accepted = Sequence[tuple[int, Action, str]]  # (Action line number, action, its trait), in order


def trait_of(tools: Registry | None, tool: str) -> str:
    return tools[tool].trait if tools is not None else "unknown"


def judge_action(
    dialect: Dialect, tools: Registry | None, accepted: Accepted, number: int, action: Action | None, line: str, answered: bool
) -> Rejection | None:
    if answered:
        return notices.action_after_answer(number, action)
    if action is None:
        return notices.tool_call_invalid(number, line, dialect.expected_action, dialect.expected, ARGS_MAX)
    if tools is not None and action.tool not in tools:
        return notices.unknown_tool(number, action.tool, tools.names)
    if len(accepted) >= dialect.max_actions:
        return notices.too_many_actions(number, action.tool, dialect.max_actions)
    trait = trait_of(tools, action.tool)
    for first, first_action, first_trait in accepted:
        if not compatible(first_trait, trait):
            return notices.incompatible_action(number, action.tool, trait, first, first_action.tool, first_trait)
    return None


def judge_answer(dialect: Dialect, accepted: Accepted) -> Rejection | None:
    if not dialect.answer_needs_neutral or answer_may_open(trait for _, _, trait in accepted):
        return None
    return notices.answer_withheld(accepted)
