"""The limits that end a run which is not going anywhere, each with its stop reason.

    max_steps            model calls in all                      -> max_steps
    unknown_tool_limit   replies in a row naming unknown tools    -> unknown_tool_limit
    format_error_limit   replies in a row without a usable action -> format_error_limit
    repeat_limit         calls made again unchanged, in all       -> repeated_call_limit
                         (same tool, same arguments, same result or error as before)

A known tool that runs resets the first two counts; 0 turns a count-limit off.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.decisions import Action, Round
from harness.events import StopReason


@dataclass(frozen=True)
class Limits:
    """How long a run may go on, and how many mistakes of each kind it forgives."""

    max_steps: int = 15
    unknown_tool_limit: int = 2
    format_error_limit: int = 3
    repeat_limit: int = 2


class Tally:
    """Counts the replies in a row that ran nothing, and the calls made again; names the limit reached."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.unknown_tools = self.format_errors = 0  # replies in a row that ran nothing, by why
        self.repeats = 0  # calls made again with the same result, in the whole run
        self.made: dict[tuple[str, str, str], int] = {}  # (tool, its arguments' repr, result) -> the step it was first made

    def again(self, step: int, action: Action, result: str) -> int | None:
        """The step where the same call gave the same result (or error) before, or None."""
        # repr tells 1, 1.0, True and "1" apart; keywords are sorted: the same call however written
        arguments = repr((action.args, sorted(action.kwargs.items())))
        first = self.made.setdefault((action.tool, arguments, result), step)
        if first == step:
            return None
        self.repeats += 1
        return first

    def after(self, decided: Round) -> StopReason | None:
        """The limit a round reached, once its actions have run (a reply without one ran nothing)."""
        if decided.actions:
            self.unknown_tools = self.format_errors = 0
            reached = self.limits.repeat_limit and self.repeats >= self.limits.repeat_limit  # (two in one reply may pass it)
            return StopReason.REPEATED_CALL_LIMIT if reached else None
        if any(r.code == "protocol_violation.unknown_tool" for r in decided.rejections):
            self.unknown_tools += 1
            if self.unknown_tools == self.limits.unknown_tool_limit:
                return StopReason.UNKNOWN_TOOL_LIMIT
        else:
            self.format_errors += 1
            if self.format_errors == self.limits.format_error_limit:
                return StopReason.FORMAT_ERROR_LIMIT
        return None
