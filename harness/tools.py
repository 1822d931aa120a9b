"""Tools: a registry of what the model may call, and the built-ins.

A tool is a plain function returning text. Whatever it raises (but a Ctrl-C), returns or
prints becomes its observation (harness.captured), so the model can try again. Built-ins:
`calculator` (arithmetic by walking the syntax tree) and canned tools, whose results a
scenario writes per argument."""

from __future__ import annotations

import ast
import inspect
import json
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from harness import captured
from harness.errors import made_of_ctrl_c
from harness.user_code import as_text, describe, message, name_of, tool_function

TRAITS = ("exploration", "exploitation", "neutral", "unknown")


class ToolError(Exception):
    """What went wrong, in words the model can act on."""


@dataclass(frozen=True)
class Tool:
    """A tool the model can call: its name, the line shown to the model, and its function."""

    name: str
    description: str  # one line, shown to the model
    params: tuple[str, ...]
    fn: Callable[..., str]
    trait: str = "unknown"
    ends_run: bool = False  # a finish tool: its result is the final answer
    example: str | None = None  # the arguments of a concrete call, as the model should type them
    example_is_real: bool = False  # the example is a call that truly answers (a canned tool's key), not made up

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(self.shown_params)})"

    @cached_property
    def shown_params(self) -> tuple[str, ...]:
        """The parameters as the tool list shows them: `daily=0.25`, one the model may leave out."""
        found = self._params.parameters
        return tuple(_shown(name, found.get(name)) for name in self.params)

    @cached_property
    def _params(self) -> inspect.Signature:
        return inspect.signature(self.fn)

    def call(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
        """Run the tool; a problem harness finds is a ToolError the model can read."""
        try:
            self._params.bind(*args, **kwargs)
        except TypeError as e:
            example = self.signature if self.example is None else f"{self.name}({self.example})"
            raise ToolError(f"{self.signature} was called with bad arguments ({e}); call it as {example}") from None
        result = self.fn(*args, **kwargs)
        if (text := as_text(result)) is None:  # a repr would hold an address: no replay would match
            if inspect.iscoroutine(result):
                result.close()  # never awaited: closed now, or Python's warning of it (naming this file) joins the observation
            holds = "holding something that is not JSON" if isinstance(result, (list, tuple, dict)) else "(an object)"
            raise ToolError(f"it returned {name_of(type(result))} {holds}, which is not text; return a str (or a number, a list or a dict of them)")
        return text


class Registry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools = {tool.name: tool for tool in tools}

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __iter__(self):
        return iter(self._tools.values())

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def render(self, signature: Callable[[str, tuple[str, ...]], str]) -> str:
        """The tool list for the prompt, calls written the dialect's way, each with a call to
        copy where there is one (a small model given `calculator(expression)` copies it)."""
        return "\n".join(
            f"- {signature(t.name, t.shown_params)}: {t.description}"
            + ("" if t.example is None else f" (example: {signature(t.name, (t.example,))})")
            for t in self._tools.values()
        )

    def run(self, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[str, bool]:
        """(observation text, ok): what the tool returned or raised, after what it printed."""
        tool = self._tools[name]
        call = captured.start()  # this call's own prints, whatever other runs' tools print
        try:
            result, ok = tool.call(args, kwargs), True
        except BaseException as e:  # user code may raise anything, SystemExit too: the model reads it (a ToolError: its words alone)
            if made_of_ctrl_c(e):  # a real Ctrl-C, or an error a library made of one: the loop cancels the run
                raise KeyboardInterrupt from e
            result, ok = "Error: " + (message(e) if isinstance(e, ToolError) else describe(e)), False
        finally:
            printed = captured.stop(call)
        if printed:
            result = printed + ("" if printed.endswith("\n") else "\n") + result
        return result, ok


# --- tools written as Python functions ---------------------------------------------------

_PLAIN = (type(None), bool, int, float, str)  # defaults whose repr is the same in every run
_DEFAULT_WIDTH = 40  # characters of a default shown; a longer one is shown as `…`


def _shown(name: str, param: inspect.Parameter | None) -> str:
    """`daily=0.25`; a default that is long or no plain value (a repr holding an address
    would change every run) is `daily=…`."""
    if param is None or param.default is param.empty:
        return name
    value = param.default  # (nan and inf are no literal the model could write back)
    text = repr(value) if type(value) in _PLAIN and not (type(value) is float and not math.isfinite(value)) else "…"
    return f"{name}={text if len(text) <= _DEFAULT_WIDTH else '…'}"


def from_function(fn: Callable[..., Any], name: str | None = None, trait: str = "unknown", example: str | None = None, *, where: str = "from_function") -> Tool:
    """A plain function as a tool: `def search(query): "Search the web."` -> search(query);
    `example` is a call's arguments as the model should write them (`'"harness"'`); `where` names it in an error."""
    name = tool_function(fn, name, where)  # a HarnessError unless harness can call it by that name (an async function too)
    doc = (inspect.getdoc(fn) or "").strip()
    description = doc.splitlines()[0] if doc else f"the Python function {getattr(fn, '__name__', name)}"
    params = tuple(p for p in inspect.signature(fn).parameters if p not in ("self", "cls"))
    return Tool(name, description, params, fn, trait, example=example)


# --- calculator ----------------------------------------------------------------------

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_MAX_BITS = 4096  # results larger than this are refused, so `9**9**9` cannot hang the run


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(left) > 1 and right * math.log2(abs(left)) > _MAX_BITS:
            raise ToolError("the result would be too large")
        try:
            value = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ToolError("division by zero") from None
        except OverflowError:
            raise ToolError("the result would be too large") from None
        if isinstance(value, complex):
            raise ToolError("the result is not a real number")
        if isinstance(value, int) and value.bit_length() > _MAX_BITS:
            raise ToolError("the result would be too large")
        return value
    raise ToolError(f"only numbers and + - * / // % ** ^ ( ) are allowed, not {ast.unparse(node)!r}")


def calculate(expression: str) -> str:
    # `^` is a power, as models (and people) write it: Python's XOR is no arithmetic, and
    # swapping the text (not the parsed operator) keeps a power's precedence: 12^2 + 7^3.
    text = str(expression).strip()
    if len(text) > 500:
        raise ToolError("the expression is longer than 500 characters")
    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ToolError(f"{text!r} is not an arithmetic expression") from None  # as the model wrote it
    value = _evaluate(tree.body)
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("the result would be too large")
    if isinstance(value, float):  # 2350 * 0.17 -> 399.5, not 399.50000000000006
        return f"{value:.12g}"
    return str(value)


def calculator() -> Tool:
    return Tool("calculator", "Evaluate an arithmetic expression", ("expression",), calculate, "neutral", example="(2 + 3) * 4")


# --- canned tools --------------------------------------------------------------------


def canned_key(args: tuple[Any, ...], kwargs: Mapping[str, Any], params: tuple[str, ...] = ()) -> str:
    """The lookup key: the one argument as text ('nimbus', '4.2'), or the arguments as JSON;
    keywords that name the next parameters count as those positions (`city="Paris"`)."""
    rest = params[len(args) : len(args) + len(kwargs)]
    if kwargs and set(rest) == set(kwargs):
        args, kwargs = (*args, *(kwargs[p] for p in rest)), {}
    if not kwargs and len(args) == 1:
        return args[0].strip() if isinstance(args[0], str) else json.dumps(args[0], ensure_ascii=False)
    return json.dumps(list(args) if not kwargs else dict(kwargs), sort_keys=True, ensure_ascii=False)


def _loose(key: str) -> str:
    """How a person compares two keys: no surrounding quotes or spaces, case and runs of spaces ignored."""
    return " ".join(key.strip().strip("'\"`").split()).casefold()


def as_typed(key: str, params: tuple[str, ...] = ()) -> str:
    """A key as a call's arguments are typed: `"lamp"`, `4.2` for a number, and for a tool
    of several parameters `"Paris", "Lyon"` (its key is the JSON list of them)."""
    if len(params) > 1 and key[:1] == "[":
        try:
            values = json.loads(key)
        except (ValueError, RecursionError):
            values = None
        if isinstance(values, list):
            return ", ".join(json.dumps(v, ensure_ascii=False) for v in values)
    if key[:1] in "\"[{":  # a string, list or object as text: quoted, as it was given
        return json.dumps(key, ensure_ascii=False)
    try:
        json.loads(key)  # a number, true, false or null: typed as it is
        return key
    except ValueError:
        return json.dumps(key, ensure_ascii=False)


KNOWN_SHOWN = 10  # keys listed in a canned tool's "no result" error
KEY_SHOWN = 120  # characters of the key it was given, quoted back
EXAMPLE_MAX = 200  # characters of a call's arguments shown as a tool's example (as a scenario's `example`)


def canned(name: str, description: str, results: Mapping[str, str], params: tuple[str, ...] = ("input",), default: str | None = None, trait: str = "unknown") -> Tool:
    """A tool whose answers are written down in advance, one per argument; a key also
    matches as a person would match it (_loose) when exactly one key matches that way."""
    loose: dict[str, list[str]] = {}
    for k in results:
        loose.setdefault(_loose(k), []).append(k)

    def lookup(*args: Any, **kwargs: Any) -> str:
        key = canned_key(args, kwargs, params)
        if key in results:
            return results[key]
        if loose and len(near := loose.get(_loose(key), ())) == 1:  # (no keys at all: nothing is near)
            return results[near[0]]
        if default is not None:
            return default
        known = ", ".join(f"{name}({as_typed(k, params)})" for k in list(results)[:KNOWN_SHOWN])
        more = f" and {len(results) - KNOWN_SHOWN:,} more" if len(results) > KNOWN_SHOWN else ""
        given = as_typed(key, params) if len(key) <= KEY_SHOWN else as_typed(key[:KEY_SHOWN]) + "…"
        raise ToolError(f"{name} has no result for {given}. It knows: {known}{more}.")

    first = as_typed(next(iter(results)), params) if results else None
    example = first if first is not None and len(first) <= EXAMPLE_MAX else None
    return Tool(name, description, params, lookup, trait, example=example, example_is_real=True)


BUILTINS: dict[str, Callable[[], Tool]] = {"calculator": calculator}  # the workspace tools: harness.workspace
