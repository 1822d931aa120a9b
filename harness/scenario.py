"""Scenarios: transcripts/*.toml, the scripted runs that demos and tests are made of.

    title = "Why do Nimbus uploads fail?"     # optional, shown by `harness list`
    prompt = "default"                       # prompts/default.txt (a shipped template, by name)
    # prompt_file = "prompts/mine.txt"       # or a template of your own, in the scenario's folder
    dialect = "default"                      # or "react-paper" (Search[x] / Finish[x]), "governed"
    question = "Why do my Nimbus uploads fail?"
    completions = ["Thought: ...\\nAction: check_quota(nimbus)\\n", "..."]   # the scripted model
    max_steps = 15                           # model calls; and unknown_tool_limit = 2,
                                             # format_error_limit = 3, repeat_limit = 2 (0: off)
    # chunk_size = 8                         # characters per chunk the scripted model streams
    # interrupt = { step = 2, at = 40 }      # a scripted Ctrl-C after 40 characters of call 2
    # model_error = { step = 2, message = "" }  # the model fails on its second call
    # use_stop = false                       # no stop sequence, as `--no-stop`
    # endpoint = "chat"                      # the buffer sent as chat messages
    # expect = "303"                         # the answer a batch checks (or expect_regex = "...")
    # redact = ["token=\\w+"]                # patterns masked (***) in model text and tool output
    # [workspace]                            # in-memory files for read_file, write_file,
    # "calc.py" = "..."                      # patch_file and finish (relative paths, no `..`)

    [tools.check_quota]                      # the tools: harness.tool_specs
    results = { nimbus = "99.8 GB of 100 GB used" }

A template names `$tools` and `$question` (`$$` is a dollar sign); a variable nobody
supplies is an error, and so is a template without `$question`. `prompt_file` is looked
for in the scenario's own folder and may not leave it; a Python tool's module is a file
there or an importable module.

This module is the schema: the fields, their defaults and their checks. A saved
transcript keeps the same fields (all but the completions) in its metadata, so
`from_dict` serves both; every problem names the file and the field. Rendering the
prompt is harness.prompts; assembling a run from a scenario is harness.record.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness import prompts
from harness.dialects import get_dialect
from harness.entry import redaction
from harness.errors import HarnessError, ScenarioError
from harness.files import Fields, load_toml, read_input
from harness.limits import Limits
from harness.prompts import data_dir
from harness.source import canonical
from harness.tool_specs import ToolSpec, parse_tool
from harness.tools import Tool, ToolError
from harness.user_code import TOOL_NAME, loading
from harness.workspace import TOOL_NAMES, Workspace, check_path

_LIMITS = Limits()


@dataclass(frozen=True)
class Scenario:
    """A scenario file, read and checked: the question, tools, model and limits of a run."""

    question: str
    completions: tuple[str, ...] = ()
    title: str = ""
    prompt: str = "default"
    prompt_file: str | None = None  # a template of the user's own, relative to `base`
    dialect: str = "default"
    tools: tuple[ToolSpec, ...] = ()
    max_steps: int = _LIMITS.max_steps
    unknown_tool_limit: int = _LIMITS.unknown_tool_limit
    format_error_limit: int = _LIMITS.format_error_limit
    repeat_limit: int = _LIMITS.repeat_limit
    chunk_size: int = 8
    interrupt: tuple[int, int] | None = None  # (step, characters streamed): a scripted Ctrl-C
    model_error: tuple[int, str] | None = None  # (step, message): the model fails at that call
    use_stop: bool = True  # False: no stop sequence (`--no-stop`; turns that come already cut)
    workspace: dict[str, str] | None = None  # in-memory files for the workspace tools
    endpoint: str = "completions"  # "chat": the buffer goes as messages (harness.backends.messages)
    expect: str | None = None  # the final answer a batch's summary checks (harness.expect)
    expect_regex: str | None = None  # or a pattern found in it
    redact: tuple[str, ...] = ()  # patterns masked in model text and tool output (harness.entry)
    source: str = field(default="", compare=False)  # where it was read from, for messages
    base: Path | None = field(default=None, compare=False)  # its folder: prompt_file and Python tools live here
    file: Path | None = field(default=None, compare=False)  # the .toml it was loaded from (absolute)
    loaded: str | None = field(default=None, compare=False, repr=False)  # its fields as loaded, canonical JSON (hashed)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str, base: Path | None = None, error: type[HarnessError] = ScenarioError) -> Scenario:
        """The fields as a saved transcript records them, a problem raised as `error`; no file is looked for (building the run checks them)."""
        return _parse(data, where, base, check_files=False, error=error)

    def to_meta(self) -> dict[str, Any]:
        """Everything a replay needs except the completions (those are the model's spans)."""
        # As a saved file holds them (JSON: a pair is a list); not asdict, which would deep-copy the completions.
        data = {name: list(v) if type(v := getattr(self, name)) is tuple else v for name in _META_FIELDS}
        for key, default in _UNSET:  # files written before these fields existed stay the same
            if data[key] == default:
                del data[key]
        if self.workspace is not None:
            data["workspace"] = dict(self.workspace)
        data["tools"] = {spec.name: spec.to_meta() for spec in self.tools}
        return data

    def template(self) -> Path:
        """The prompt template's file (harness.prompts says where it may be)."""
        if self.prompt_file is not None:
            return prompts.by_path(self.prompt_file, self.base or Path.cwd(), f"{self.source}: prompt_file")
        return prompts.by_name(self.prompt, f"{self.source}: prompt")

    def build_tools(self, workspace: Workspace | None = None) -> tuple[Tool, ...]:
        """The scenario's tools, ready to call (`tool.call(args, kwargs)`); the workspace
        tools work on `workspace`, by default a fresh one holding the scenario's files."""
        if workspace is None and self.workspace is not None:
            workspace = Workspace(self.workspace)
        python = any(spec.python is not None for spec in self.tools)
        with loading(self.base or Path.cwd()) if python else nullcontext():  # their modules, loaded together (harness.user_code)
            return tuple(spec.build(workspace, self.base, self.source) for spec in self.tools)

    def but(self, **changes: Any) -> Scenario:
        """A copy with some fields changed (`--max-steps`, `--no-stop`)."""
        return replace(self, **changes)

    @property
    def limits(self) -> Limits:
        return Limits(**{key: getattr(self, key) for key in _LIMIT_FIELDS})

    @property
    def overrides(self) -> dict[str, Any]:
        """The fields this run changed from the file as loaded (--max-steps, --no-stop, ...)."""
        if self.loaded is None:
            return {}
        loaded = json.loads(self.loaded)
        return {k: v for k, v in self.to_meta().items() if loaded.get(k) != v}


def find_scenario(name: str) -> Path:
    """A path to a .toml file, or the name of a shipped scenario (`nimbus`)."""
    path = Path(name)
    if path.is_dir():
        raise ScenarioError(name, "is a folder; give a scenario .toml file")
    if path.exists() or path.is_symlink():  # a FIFO, a device, a broken or looping link too: load_scenario says which, unopened
        return path
    shipped = data_dir("transcripts") / f"{name}.toml"
    if path.suffix == "" and path.name == name and shipped.is_file():  # a bare name: `./nimbus` is a path, and not there
        return shipped
    raise ScenarioError(name, "no such file, and no shipped scenario has that name (see `harness list`)")


def load_scenario(path: str | Path, shown: str | None = None) -> Scenario:
    """The scenario in `path`; messages name it as `shown` (by default the path itself)."""
    path = Path(path)
    text = read_input(path, ScenarioError)  # only a regular file (harness/files.py)
    if text.startswith("\ufeff"):
        raise ScenarioError(shown or str(path), "the file begins with a byte-order mark; save it as UTF-8 without one")
    try:
        data = load_toml(text)
    except ValueError as e:
        raise ScenarioError(shown or str(path), f"malformed TOML: {e}") from None
    scenario = _parse(data, shown or str(path), path.parent.absolute())  # absolute: a tool's os.chdir cannot move it
    return replace(scenario, file=path.absolute(), loaded=canonical(scenario.to_meta()))


def shipped_scenarios() -> list[Path]:
    return sorted(data_dir("transcripts").glob("*.toml"))


# --- validation: one clear message naming the file and the field ---------------------

FIELDS = {f for f in Scenario.__dataclass_fields__ if f not in ("source", "base", "file", "loaded")}
_META_FIELDS = [f for f in Scenario.__dataclass_fields__ if f in FIELDS and f != "completions"]  # in order
_UNSET = (("prompt_file", None), ("endpoint", "completions"), ("expect", None), ("expect_regex", None), ("redact", []))
_LIMIT_FIELDS = ("max_steps", "unknown_tool_limit", "format_error_limit", "repeat_limit")


def _parse(data: dict[str, Any], where: str, base: Path | None, check_files: bool = True, error: type[HarnessError] = ScenarioError) -> Scenario:
    """The fields checked, in the order a reader meets them in the file; any problem is one `error` naming the field."""
    try:
        read = Fields(data, f"{where}: ", ScenarioError)
        for key in data:
            if key not in FIELDS:
                raise read.fail(key, f"unknown field (known: {', '.join(sorted(FIELDS))})")
        workspace = _workspace(read)
        expect, expect_regex = _expect(read)
        scenario = Scenario(
            question=read.text("question"),
            completions=read.strings("completions"),
            title=read.text("title", ""),
            **_template(read, check_files),
            tools=_tools(read, workspace is not None),
            **{key: read.count(key, getattr(_LIMITS, key)) for key in _LIMIT_FIELDS},
            chunk_size=read.count("chunk_size", 8, least=1),
            interrupt=_pair(read, "interrupt", ("step", "at"), int),
            model_error=_pair(read, "model_error", ("step", "message"), str),
            use_stop=read.flag("use_stop"),
            workspace=workspace,
            endpoint=read.choice("endpoint", ("completions", "chat"), "completions"),  # chat: harness.backends.messages
            expect=expect,
            expect_regex=expect_regex,
            redact=read.strings("redact"),
            source=where,
            base=base,
        )
        redaction(scenario.redact, f"{where}: redact")  # each pattern must compile (harness.entry)
        if check_files:
            scenario.template()  # the template must exist, and be where a template may be
        return scenario
    except HarnessError as e:
        raise error(e.where, e.message) from None


def _pair(read: Fields, key: str, names: tuple[str, str], kind: type) -> tuple[Any, Any] | None:
    """`key = { step = 2, <name> = ... }` -> (2, ...), or None when absent."""
    value = read.data.get(key)
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 2:  # a saved transcript's metadata holds the pair as a list
        value = dict(zip(names, value))
    if not isinstance(value, dict) or set(value) != set(names):
        raise read.fail(key, f"must be a table with exactly {names[0]} and {names[1]}")
    pair = Fields(value, f"{read.where}{key}.", read.error)  # its two fields, read as any other
    return pair.count(names[0], 0, least=1), (pair.count(names[1], 0) if kind is int else pair.text(names[1]))


def _template(read: Fields, check_files: bool) -> dict[str, Any]:
    """dialect, prompt and prompt_file: how the buffer begins."""
    dialect = read.text("dialect", "default")
    get_dialect(dialect, f"{read.where}dialect")  # a known one (raised as _parse's error)
    prompt = read.text("prompt", "default")
    prompts.check_name(prompt, f"{read.where}prompt")  # by name only, never a path
    prompt_file = read.optional("prompt_file")
    if check_files and prompt_file is not None and "prompt" in read.data:  # (a saved file's metadata always holds both)
        raise read.fail("prompt_file", "goes instead of prompt, not with it (a template is named one way: prompt, or prompt_file)")
    return {"dialect": dialect, "prompt": prompt, "prompt_file": prompt_file}


def _workspace(read: Fields) -> dict[str, str] | None:
    workspace = read.data.get("workspace")
    if workspace is not None and (not isinstance(workspace, dict) or not all(isinstance(v, str) for v in workspace.values())):
        raise read.fail("workspace", "must be a table of file paths to their text")
    for path in workspace or ():
        try:
            check_path(path)  # the workspace tools' own rule: a file they would refuse is never one of theirs
        except ToolError as e:
            raise read.fail("workspace", str(e)) from None
    return workspace


def _tools(read: Fields, has_workspace: bool) -> tuple[ToolSpec, ...]:
    tools = read.table("tools", "must be a table of [tools.NAME] tables")
    for name in tools:
        if not TOOL_NAME.fullmatch(name):
            raise read.fail("tools", f"{name!r} is not a tool name (a letter or _, then letters, digits, _)")
        if name in TOOL_NAMES and not has_workspace:
            raise read.fail(f"tools.{name}", "needs a [workspace] table of files to work on")
    return tuple(parse_tool(name, spec, f"{read.where}tools.{name}") for name, spec in tools.items())


def _expect(read: Fields) -> tuple[str | None, str | None]:
    expect, expect_regex = read.optional("expect"), read.optional("expect_regex")
    if expect is not None and expect_regex is not None:
        raise read.fail("expect_regex", "goes instead of expect, not with it (an answer is checked one way)")
    if expect_regex is not None:
        from harness.expect import check_pattern  # (it imports `regex`: a user's pattern runs under a time bound)

        check_pattern(expect_regex, f"{read.where}expect_regex")
    return expect, expect_regex
