"""User code, contained: importing a user's module, telling what it raised, and what it
returned as text.

A Python tool (or an Agent a saved file names) is the user's code. Importing it may
print, raise anything (SystemExit too) or fail in its exception's own __str__; each of
those is one HarnessError naming the field and the module's full dotted name, and what it
prints while importing is dropped. Only a real Ctrl-C goes on up.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import regex

from harness.captured import printed_here
from harness.errors import HarnessError
from harness.files import resolved


def message(e: BaseException) -> str:
    """str(e), even when the exception's own __str__ fails."""
    try:
        return str(e)
    except KeyboardInterrupt:
        raise
    except BaseException as inner:
        return f"(its message could not be shown: {type(inner).__name__})"


def describe(e: BaseException) -> str:
    """'KeyError: 'b'', or the type's name alone when it has no message."""
    text = message(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def import_function(spec: str, folder: Path, field: str) -> Callable[..., Any]:
    """'module:function': a module file in `folder` if there is one, else an importable
    module. A module that is missing or fails to import is one HarnessError naming it."""
    module_name, _, function = spec.partition(":")
    relative = module_name.replace(".", "/") + ".py"
    path = folder / relative
    try:
        if path.exists() and not resolved(path).is_relative_to(resolved(folder)):  # a link that leads out
            raise HarnessError(field, f"{module_name!r} leads out of the scenario's folder {folder}")
        if path.is_symlink() and not path.exists():
            raise HarnessError(field, f"{relative} in {folder} is a link that loops or leads nowhere")
    except OSError as e:
        raise HarnessError(field, f"{relative} in {folder} cannot be looked up ({e.strerror or e})") from None
    if path.is_file():
        module = _from_file(path, module_name, field, folder)
    else:
        module = _importable(module_name, field, f"no module {module_name!r}: no {relative} in {folder}, and none importable")
    fn = _contained(lambda: getattr(module, function, None), module_name, field)  # a module __getattr__ is user code too
    if not callable(fn):
        raise HarnessError(field, f"{module_name!r} has no function {function!r}")
    return fn


# sys.path is the whole process's, and replays run in threads (`harness replay --jobs`):
# one import at a time puts the project on it and takes it off, so that no import ends
# while another is still importing from it. Re-entrant: an Agent's module may import one.
_ON_PATH = threading.RLock()


def import_object(ref: str, root: Path, field: str) -> Any:
    """'module:attribute' from an importable module (`root`, the project, is searched too)."""
    module_name, _, attribute = ref.partition(":")
    with _ON_PATH:
        added = str(root) not in sys.path
        if added:
            sys.path.insert(0, str(root))
        try:
            module = _importable(module_name, field, f"no module {module_name!r} can be imported (from {root} or the environment)")
        finally:
            if added:
                sys.path.remove(str(root))
    missing = object()
    value = _contained(lambda: getattr(module, attribute, missing), module_name, field)
    if value is missing:
        raise HarnessError(field, f"{module_name!r} has no attribute {attribute!r}")
    return value


def _from_file(path: Path, module_name: str, field: str, folder: Path) -> Any:
    text = path.read_bytes()
    where = resolved(folder)  # (import_function resolved both already: no loop here)
    root = _as_package(where)
    parent = module_name.rpartition(".")[0]
    name = f"{root}.{module_name}"
    with _ON_PATH:  # one thread imports it, another finds it imported
        # Known by its path, its text and its neighbours' texts: a tool module, or a helpers.py
        # it imported from its folder, edited in one long pytest session is imported afresh.
        known = _own(module := sys.modules.get(name))
        if known.get("__harness_text__") == _key(path, text, known.get("__harness_neighbours__", ())):
            return module
        _drop_if_edited(root, name)  # the folder's relative modules, all afresh if one was edited
        with _siblings(where) as found:
            if parent:  # its packages (pkg/__init__.py), imported as Python imports them
                _contained(lambda: importlib.import_module(f"{root}.{parent}"), module_name, field)
            module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path))
            # Compiled from the text just read and hashed, never a cached .pyc (an edit in the same second
            # would pass for it); as an import does: own __future__ imports, its file's name, in sys.modules.
            code = _contained(lambda: compile(text, module.__file__, "exec", dont_inherit=True), module_name, field)
            sys.modules[name] = module
            try:
                _contained(lambda: exec(code, module.__dict__), module_name, field)
            except BaseException:
                del sys.modules[name]
                raise
            # The folder's relative modules loaded so far: one another tool module imported first is this one's too.
            relatives = [n for n, m in list(sys.modules.items()) if n.startswith(root + ".") and n != name and "__harness_text__" not in _own(m)]
            found += [sys.modules[n] for n in relatives]
        files = {f for m in found if isinstance(f := _own(m).get("__file__"), str) and Path(f).is_relative_to(where)}
        module.__harness_neighbours__ = tuple(sorted(files))
        for relative in relatives:  # what each was loaded from, so that one edited since is told apart
            if (own := _own(sys.modules.get(relative))) and "__harness_loaded__" not in own and isinstance(own.get("__file__"), str):
                own["__harness_loaded__"] = _loaded(own["__file__"])
        module.__harness_text__ = _key(path, text, module.__harness_neighbours__)
    return module


def _key(path: Path, text: bytes, neighbours: tuple[str, ...]) -> str:
    """What a tool module was imported from: its path, its text, its neighbours' texts."""
    import hashlib

    key = hashlib.sha256(str(resolved(path)).encode() + b"\0" + text)
    for neighbour in neighbours:
        key.update(b"\0" + neighbour.encode() + b"\0" + neighbour_bytes(neighbour))
    return key.hexdigest()[:16]


def _loaded(file: str) -> str:  # what a relative module's file holds now
    return _key(Path(file), neighbour_bytes(file), ())


def neighbour_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:  # gone: that is a change too
        return b"\0gone"


def _as_package(where: Path) -> str:
    """The scenario's folder as a package of its own, so that a tool module in it imports its
    neighbours relatively (`from .util import x`) without meeting another folder's names."""
    import hashlib
    import importlib.machinery
    import types

    root = "harness_tools_" + hashlib.sha256(str(where).encode()).hexdigest()[:16]
    if root not in sys.modules:
        package = types.ModuleType(root)
        package.__spec__ = importlib.machinery.ModuleSpec(root, None, is_package=True)
        package.__spec__.submodule_search_locations = package.__path__ = [str(where)]
        package.__package__ = root
        sys.modules[root] = package
    return root


@contextmanager
def _siblings(where: Path) -> Iterator[list]:
    """While a tool module is imported, its folder is on sys.path (`import helpers` finds the
    helpers.py beside it, as `python tools.py` would); what it imported from there leaves
    sys.modules afterwards (the tool keeps it), so that another folder's helpers.py is its own.
    `where`: the folder, resolved. What it yields ends up holding those modules."""
    before, found = set(sys.modules), []
    sys.path.insert(0, str(where))
    try:
        yield found
    finally:
        # (first: a namespace package's __path__ is worked out anew from sys.path)
        for name in [name for name in set(sys.modules) - before if _beside(name, where, before)]:
            found.append(sys.modules.pop(name))
        if str(where) in sys.path:  # (the module may have taken it off itself)
            sys.path.remove(str(where))


def _drop_if_edited(root: str, name: str) -> None:
    """If a relative module of the folder (not a tool module) was edited since it was loaded,
    all of them leave sys.modules and their packages, to be loaded afresh together: none keeps
    an old one it imports, two tool modules share the new. (One loaded as a tool ran: as it is.)"""
    loaded = [(n, m) for n, m in list(sys.modules.items()) if n.startswith(root + ".") and n != name and "__harness_text__" not in _own(m)]

    if not any(isinstance(f := _own(m).get("__file__"), str) and _own(m).get("__harness_loaded__") not in (None, _loaded(f)) for _, m in loaded):
        return
    for n, module in loaded:
        sys.modules.pop(n, None)
        parent, _, attribute = n.rpartition(".")
        if _own(sys.modules.get(parent)).get(attribute) is module:
            delattr(sys.modules[parent], attribute)


def _own(module: Any) -> dict:
    """A module's own names (its __dict__), asking no module __getattr__ of user code."""
    try:
        return object.__getattribute__(module, "__dict__") if module is not None else {}
    except Exception:  # (sys.modules may hold anything)
        return {}


def _beside(name: str, where: Path, before: set[str]) -> bool:
    """Was the module `name`, new in this import as was its top package, found in `where`: a
    file or a package (a folder without __init__.py too) at the top of it, by that name? As
    found, links not followed: a helpers.py that links elsewhere is this folder's."""
    top, known = name.partition(".")[0], _own(sys.modules.get(name))
    found = known.get("__file__") or next(iter(known.get("__path__") or ()), None)
    if top in before or not found:
        return False
    place = Path(found)
    return place.is_relative_to(where) and place.relative_to(where).parts[0].partition(".")[0] == top


def _importable(module_name: str, field: str, missing: str) -> Any:
    try:
        return _contained(lambda: importlib.import_module(module_name), module_name, field)
    except _Missing:
        raise HarnessError(field, missing) from None


class _Missing(Exception):
    """The module itself (or a package above it) does not exist."""


def _contained(load: Callable[[], Any], module_name: str, field: str) -> Any:
    """Import user code: what it prints is dropped, whatever it raises is one HarnessError."""
    try:
        with printed_here():  # dropped; this thread's only (harness.captured)
            return load()
    except KeyboardInterrupt:
        raise
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise _Missing from None
        raise HarnessError(field, f"the module {module_name!r} failed to import ({_said(e)})") from None
    except BaseException as e:
        raise HarnessError(field, f"the module {module_name!r} failed to import ({_said(e)})") from None


def _said(e: BaseException) -> str:
    return _PACKAGE.sub("", describe(e))  # the folder's package is harness's name, not the user's


_PACKAGE = regex.compile(r"harness_tools_[0-9a-f]{16}\.?")


def as_text(value: Any) -> str | None:
    """What a function returned, as text that is the same on every run: a str as it is, a
    number (or None) as Python writes it, a list or dict as JSON (as the finish tool writes
    one); None for anything else."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return str(value)
    if isinstance(value, (list, tuple, dict)):
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return None
    return None


def what_it_holds(value: Any) -> str:
    return "holding something that is not JSON" if isinstance(value, (list, tuple, dict)) else "(an object)"


TOOL_NAME = regex.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")  # what an Action line can name


def tool_function(fn: Any, name: str | None, where: str) -> str:
    """The name a function is called by as a tool (`name`, else its own), once it is one
    harness can call: a plain function, not async (harness never awaits: its coroutine
    would be the result, and Python's warning about it would land in the observation)."""
    if not callable(fn):
        raise HarnessError(where, f"must be a function, not {type(fn).__name__}")
    shown = getattr(fn, "__qualname__", None) or type(fn).__name__
    if inspect.isasyncgenfunction(fn):
        raise HarnessError(where, f"{shown} is an async generator function; a tool is a plain function that returns its text")
    called = None if inspect.isclass(fn) else getattr(fn, "__call__", None)  # an object with an async __call__ too
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(called):
        raise HarnessError(where, f"{shown} is an async function (async def); a tool is a plain function that returns its text")
    rule = "a letter or _, then letters, digits, _"
    if name is not None:
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise HarnessError(where, f"name={name!r:.80} is not a tool name ({rule})")
        return name
    own = getattr(fn, "__name__", None)
    if not isinstance(own, str) or not TOOL_NAME.fullmatch(own):  # `<lambda>`: no model could call it
        raise HarnessError(where, f"the function's name is {own!r:.80}, not a tool name ({rule}); give it one: from_function(fn, name=\"...\")")
    return own
