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

from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.errors import ScenarioError
from harness.patterns import lazy
from harness.tools import BUILTINS, TRAITS, Tool, canned, from_function
from harness.user_code import import_function
from harness.values import value
from harness.workspace import TOOL_NAMES, Workspace

_TOOL_FIELDS = {"description", "params", "results", "default", "trait", "python", "example"}
_PYTHON_REF = lazy(r"[A-Za-z_]\w{0,63}(?:\.[A-Za-z_]\w{0,63}){0,7}:[A-Za-z_]\w{0,63}")  # a Python tool: module:function


@value
class ToolSpec:
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
            fields |= {"description": self.description, "params": list(self.params), "results": self.results}
            fields["default"] = self.default
        return {k: v for k, v in fields.items() if v is not None}

    def build(self, workspace: Workspace | None, base: Path | None, source: str = "") -> Tool:
        if self.python is not None:
            where = f"{source}: tools.{self.name}.python" if source else f"tools.{self.name}.python"
            fn = import_function(self.python, base or Path.cwd(), where)
            return from_function(fn, self.name, self.trait or "unknown", self.example)
        if self.results is not None:
            tool = canned(self.name, self.description, self.results, self.params, self.default, self.trait or "unknown")
        elif self.name in TOOL_NAMES and workspace is not None:
            tool = next(t for t in workspace.tools() if t.name == self.name)
        else:
            tool = BUILTINS[self.name]()
        changes = {"trait": self.trait, "example": self.example}
        return replace(tool, **{k: v for k, v in changes.items() if v is not None})


def parse_tool(name: str, spec: Any, where: str) -> ToolSpec:
    if not isinstance(spec, dict):
        raise ScenarioError(where, "must be a table")
    for key in spec:
        if key not in _TOOL_FIELDS:
            raise ScenarioError(f"{where}.{key}", f"unknown field (known: {', '.join(sorted(_TOOL_FIELDS))})")
    trait = spec.get("trait")
    if trait is not None and trait not in TRAITS:
        raise ScenarioError(f"{where}.trait", f"must be one of {', '.join(TRAITS)}")
    example = spec.get("example")
    if example is not None and (not isinstance(example, str) or "\n" in example or len(example) > 200):
        raise ScenarioError(f"{where}.example", "must be one line of at most 200 characters: a call's arguments")
    python = spec.get("python")
    if python is not None and (extra := sorted(set(spec) - {"python", "trait", "example"})):
        raise ScenarioError(f"{where}.{extra[0]}", "does not go with python: the function's docstring and parameters say it")
    if python is not None:
        if not isinstance(python, str) or not _PYTHON_REF.fullmatch(python):
            raise ScenarioError(f"{where}.python", "must read 'module:function' (a module beside the scenario, or an importable one)")
        return ToolSpec(name, trait=trait, python=python, example=example)
    results = spec.get("results")
    if results is None:
        if name not in BUILTINS and name not in TOOL_NAMES:
            builtins = ", ".join([*BUILTINS, *TOOL_NAMES])
            raise ScenarioError(f"{where}.results", f"is required: {name!r} is not a built-in ({builtins})")
        return ToolSpec(name, trait=trait, example=example)
    if not isinstance(results, dict) or not all(isinstance(v, str) for v in results.values()):
        raise ScenarioError(f"{where}.results", "must be a table of strings, one per argument")
    description, params, default = spec.get("description"), spec.get("params", ["input"]), spec.get("default")
    if not isinstance(description, str) or not description.strip():
        raise ScenarioError(f"{where}.description", "is required: one line that tells the model what the tool does")
    if not isinstance(params, list) or not all(isinstance(p, str) for p in params):
        raise ScenarioError(f"{where}.params", "must be a list of parameter names")
    if default is not None and not isinstance(default, str):
        raise ScenarioError(f"{where}.default", "must be a string")
    return ToolSpec(name, description, tuple(params), dict(results), default, trait, example=example)
