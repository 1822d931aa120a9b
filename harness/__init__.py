"""harness: a ReAct loop you can see through (harness.loop is the loop).

The agent is one growing text buffer (Transcript) in which every byte is tagged developer,
model or code; a run ends as one RunRecord that saves, loads, replays and shows. The public
API is what this module exports; the README shows it at work.
"""

from __future__ import annotations

import importlib

# Each name is imported on first use, so that `harness --help` (which imports this
# package) does not pay for the loop, the dialects and the tools it never runs.
_MODULES = {
    "harness.agent": ["Agent"],
    "harness.errors": ["HarnessError"],
    "harness.events": ["StopReason"],
    "harness.limits": ["Limits"],
    "harness.model": ["Model", "ModelError", "ScriptedModel", "TokenUsage"],
    "harness.record": ["replay", "run_scenario"],
    "harness.run_record": ["CallRecord", "RunRecord"],
    "harness.saved": ["load_record"],
    "harness.scenario": ["Scenario", "find_scenario", "load_scenario"],
    "harness.tools": ["Tool", "ToolError", "from_function"],
    "harness.transcript": ["Author", "Span", "Transcript"],
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_WHERE)
__version__ = "0.1.0"


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

