"""Reading the arguments of a call, as models write them.

    ''                    -> no arguments
    '{"city": "Paris"}'   -> keyword arguments (a JSON object)
    '"x"', '42'           -> one argument (a JSON value)
    '1, "b"'              -> two (JSON values separated by commas)
    "'Paris'"             -> one, 'city="Paris"' -> keywords: a Python-style call, as code
                             models write them; plain literals only, read by Python's parser
                             and never run (an expression given by keyword is its text)
    'nimbus', '2 + 3'     -> else the bare text, as one string

Model text is untrusted: an Action line holds at most ARGS_MAX characters, the parser
refuses deep nesting itself, and nothing here evaluates anything.
"""

from __future__ import annotations

import ast
import json
import warnings
from typing import Any

ARGS_MAX = 100_000  # characters of arguments on one Action line (a file written whole fits)


def parse_args(raw: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """(args, kwargs) from the text between a call's brackets (see the module's docstring)."""
    text = raw.strip()
    try:
        values = json.loads(f"[{text}]")  # JSON values separated by commas: none, one or several
    except (ValueError, RecursionError):  # json raises RecursionError on deep nesting
        return _python_args(text) or ((text,), {})
    return ((), values[0]) if len(values) == 1 and isinstance(values[0], dict) else (tuple(values), {})


_PLAIN = (str, int, float, bool, type(None))
_DEPTH = 20  # nesting of lists and dicts in one argument


def _python_args(text: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The arguments of `f(text)` if they are all plain literals, else None (ast.parse runs nothing)."""
    source = f"f({text})"
    try:
        with warnings.catch_warnings():  # model text is not ours to warn about ('C:\data')
            warnings.simplefilter("ignore")
            call = ast.parse(source, mode="eval").body
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.func.id != "f":
            return None  # `'a'), g(` closes the call early: not one call's arguments
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        args = tuple(_literal(a) for a in call.args)
        encoded = source.encode("utf-8") if call.keywords else b""
        return args, {k.arg: _keyword_value(k.value, encoded) for k in call.keywords}
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return None


class Written(str):
    """A keyword argument written as an expression (`expression=127 * 83`): its text, as the
    tool gets it (the calculator reads it; nothing runs it). Marked, so that a tool call
    written inside it is still told apart from a quoted string (harness.judge)."""


def _keyword_value(node: ast.AST, encoded: bytes) -> Any:
    """A literal, or else the expression's own text (the node's offsets count bytes of UTF-8)."""
    try:
        return _literal(node)
    except ValueError:
        return Written(encoded[node.col_offset : node.end_col_offset].decode("utf-8"))


def _literal(node: ast.AST, depth: int = 0) -> Any:
    """A literal of JSON's kinds (a tuple becomes a list); anything else is a ValueError."""
    if depth > _DEPTH:
        raise ValueError("nested too deeply")
    if isinstance(node, ast.Constant) and isinstance(node.value, _PLAIN):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        if type(value) in (int, float):
            return -value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
        return {k.value: _literal(v, depth + 1) for k, v in zip(node.keys, node.values)}
    raise ValueError("not a plain literal")


def split_call(rest: str, close: str) -> tuple[str, str] | None:
    """'6.5 * 340) * 1.80' -> ('6.5 * 340', ' * 1.80'): the arguments up to the bracket that
    closes the call, and what follows it; None if it never closes. Quoted text is passed
    over; past the last closing bracket nothing can close the call."""
    opening = {")": "(", "]": "["}[close]
    depth, quote = 0, ""
    for i, ch in enumerate(rest[: rest.rfind(close) + 1]):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == opening:
            depth += 1
        elif ch == close:
            if depth == 0:
                return rest[:i], rest[i + 1 :]
            depth -= 1
    return None
