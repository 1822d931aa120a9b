"""The limits that end a run which is not going anywhere, each with its stop reason.

    max_steps            model calls in all                      -> max_steps
    unknown_tool_limit   replies in a row naming unknown tools    -> unknown_tool_limit
    format_error_limit   replies in a row without a usable action -> format_error_limit

A known tool that runs resets both counts; 0 turns a count-limit off. The defaults are
written here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.decisions import Round
from harness.events import StopReason


@dataclass(frozen=True)
class Limits:
    max_steps: int = 15
    unknown_tool_limit: int = 2
    format_error_limit: int = 3


class Tally:
    """Counts the replies in a row that ran nothing; says when a limit is reached."""

    def __init__(self, limits: Limits) -> None:
        self.limits, self.unknown_tools, self.format_errors = limits, 0, 0

    def after(self, decided: Round) -> StopReason | None:
        if decided.actions:
            self.unknown_tools = self.format_errors = 0
        elif any(r.code == "protocol_violation.unknown_tool" for r in decided.rejections):
            self.unknown_tools += 1
            if self.unknown_tools == self.limits.unknown_tool_limit:
                return StopReason.UNKNOWN_TOOL_LIMIT
        else:
            self.format_errors += 1
            if self.format_errors == self.limits.format_error_limit:
                return StopReason.FORMAT_ERROR_LIMIT
        return None
