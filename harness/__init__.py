"""harness: a ReAct loop you can see through.

The agent is one growing text buffer (Transcript). The loop sends the whole buffer to the
model, appends the completion verbatim, parses an Action with the dialect's regexes, runs
the tool and splices in the observation. Every byte is tagged developer, model or code,
and the run ends as one RunRecord that saves, loads, replays and shows.

The public API is what this module exports; the README shows it at work.
"""

from __future__ import annotations

import importlib

# Each name is imported on first use, so that `harness --help` (which imports this
# package) does not pay for the loop, the dialects and the tools it never runs.
_WHERE = {
    "Agent": "harness.agent",
    "Author": "harness.transcript",
    "CallRecord": "harness.run_record",
    "HarnessError": "harness.errors",
    "Limits": "harness.limits",
    "Model": "harness.model",
    "ModelError": "harness.model",
    "RunRecord": "harness.run_record",
    "Scenario": "harness.scenario",
    "ScriptedModel": "harness.model",
    "Span": "harness.transcript",
    "StopReason": "harness.events",
    "TokenUsage": "harness.model",
    "Tool": "harness.tools",
    "ToolError": "harness.tools",
    "Transcript": "harness.transcript",
    "find_scenario": "harness.scenario",
    "from_function": "harness.tools",
    "load_record": "harness.saved",
    "load_scenario": "harness.scenario",
    "replay": "harness.record",
    "run_scenario": "harness.record",
}
__all__ = list(_WHERE)
__version__ = "0.1.0"


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

