"""A scenario's `[tools.NAME]` tables: the schema of one tool, and building it.

    [tools.calculator]                       # a built-in, as it is
    [tools.check_quota]                      # a canned tool: results written per argument
    description = "Storage used and allowed for an account"
    params = ["account"]
    results = { nimbus = "99.8 GB of 100 GB used" }
    default = "no such account"              # optional: the answer for any other argument
    example = '"nimbus"'                     # optional: a call's arguments, shown in the tool list
    [tools.search]                           # a Python function of your own: a module file
    python = "mytools:search"                # beside the scenario, or an importable module
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.errors import ScenarioError
from harness.tools import BUILTINS, TRAITS, Tool, canned, from_function
from harness.user_code import import_function
from harness.workspace import TOOL_NAMES, Workspace

_PYTHON_REF = r"[A-Za-z_]\w{0,63}(?:\.[A-Za-z_]\w{0,63}){0,7}:[A-Za-z_]\w{0,63}"  # a Python tool: module:function (compiled when first matched)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as a scenario file states it, before it is built into a Tool."""

    name: str
    description: str = ""
    params: tuple[str, ...] = ("input",)
    results: dict[str, str] | None = None  # None: the built-in of that name (or a Python tool)
    default: str | None = None
    trait: str | None = None
    python: str | None = None  # "module:function", imported from the scenario's folder
    example: str | None = None  # a call's arguments as the model should write them (canned: its first key)

    def to_meta(self) -> dict[str, Any]:
        fields = {"trait": self.trait, "python": self.python, "example": self.example}
        if self.results is not None:
            fields |= {"description": self.description, "params": list(self.params), "results": self.results, "default": self.default}
        return {k: v for k, v in fields.items() if v is not None}

    def build(self, workspace: Workspace | None, base: Path | None, source: str = "") -> Tool:
        if self.python is not None:
            where = f"{source}: tools.{self.name}.python" if source else f"tools.{self.name}.python"
            fn = import_function(self.python, base or Path.cwd(), where)
            return from_function(fn, self.name, self.trait or "unknown", self.example, where=where)
        if self.results is not None:
            tool = canned(self.name, self.description, self.results, self.params, self.default, self.trait or "unknown")
        elif self.name in TOOL_NAMES and workspace is not None:
            tool = next(t for t in workspace.tools() if t.name == self.name)
        else:
            tool = BUILTINS[self.name]()
        changes = {k: v for k, v in {"trait": self.trait, "example": self.example}.items() if v is not None}
        return replace(tool, **changes) if changes else tool


_KINDS: dict[str, tuple[type, str]] = {  # each field's type, checked for any tool: a wrong one is never dropped
    "description": (str, "must be a string: one line that tells the model what the tool does"),
    "params": (list, "must be a list of parameter names (strings)"),
    "results": (dict, "must be a table of strings, one per argument"),
    "default": (str, "must be a string: the answer for any other argument"),
    "trait": (str, f"must be one of {', '.join(TRAITS)}"),
    "python": (str, "must read 'module:function' (a module beside the scenario, or an importable one)"),
    "example": (str, "must be one line of at most 200 characters: a call's arguments"),
}


def parse_tool(name: str, spec: Any, where: str) -> ToolSpec:
    if not isinstance(spec, dict):
        raise ScenarioError(where, "must be a table")
    for key, given in spec.items():
        if key not in _KINDS:
            raise ScenarioError(f"{where}.{key}", f"unknown field (known: {', '.join(sorted(_KINDS))})")
        kind, must = _KINDS[key]
        items = () if not isinstance(given, (list, dict)) else given.values() if isinstance(given, dict) else given  # (params, results)
        if not isinstance(given, kind) or not all(isinstance(item, str) for item in items):
            raise ScenarioError(f"{where}.{key}", must)
    trait, example, python, results = (spec.get(k) for k in ("trait", "example", "python", "results"))
    if trait is not None and trait not in TRAITS:
        raise ScenarioError(f"{where}.trait", _KINDS["trait"][1])
    if example is not None and ("\n" in example or len(example) > 200):
        raise ScenarioError(f"{where}.example", _KINDS["example"][1])
    if python is not None and (extra := sorted(set(spec) - {"python", "trait", "example"})):
        raise ScenarioError(f"{where}.{extra[0]}", "does not go with python: the function's docstring and parameters say it")
    if python is not None:
        if not re.fullmatch(_PYTHON_REF, python):
            raise ScenarioError(f"{where}.python", _KINDS["python"][1])
        return ToolSpec(name, trait=trait, python=python, example=example)
    if results is None:
        if name not in BUILTINS and name not in TOOL_NAMES:
            builtins = ", ".join([*BUILTINS, *TOOL_NAMES])
            raise ScenarioError(f"{where}.results", f"is required: {name!r} is not a built-in ({builtins})")
        if extra := sorted(set(spec) - {"trait", "example"}):  # (it would be dropped: the built-in's own are used)
            raise ScenarioError(f"{where}.{extra[0]}", f"does not go with the built-in {name}: it has its own description and parameters")
        return ToolSpec(name, trait=trait, example=example)
    description, params, default = spec.get("description"), spec.get("params", ["input"]), spec.get("default")
    if description is None or not description.strip():
        raise ScenarioError(f"{where}.description", "is required: one line that tells the model what the tool does")
    return ToolSpec(name, description, tuple(params), dict(results), default, trait, example=example)
