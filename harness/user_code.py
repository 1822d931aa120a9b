"""User code, contained: loading a user's module, telling what it raised, and what it
returned as text.

Importing a Python tool (or an Agent a saved file names) may print, raise anything or fail
in its own __str__: each is one HarnessError naming the field and the module, and what it
prints is dropped. A scenario's tool modules are loaded afresh by every build, from their
text, as a package of the build's own: a module finds its neighbours there, never on sys.path.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.machinery
import importlib.util
import inspect
import itertools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import regex

from harness import captured
from harness.errors import HarnessError
from harness.files import resolved


def plain(text: str) -> str:
    """`text` as an exact str, so a str subclass's own methods are never called on it again."""
    return str.__str__(text)


def message(e: BaseException) -> str:
    """str(e), even when the exception's own __str__ fails or returns a hostile str."""
    try:
        return plain(str(e))
    except KeyboardInterrupt:
        raise
    except BaseException as inner:
        return f"(its message could not be shown: {name_of(type(inner))})"


def name_of(kind: type) -> str:
    """A class's own name, whatever its metaclass says `__name__` is."""
    try:
        return plain(type.__dict__["__name__"].__get__(kind))
    except Exception:  # (type's own getter cannot fail on a class; its name may be no plain str)
        return "?"


def describe(e: BaseException) -> str:
    """'KeyError: 'b'', or the type's name alone when it has no message."""
    text = message(e)
    return f"{name_of(type(e))}: {text}" if text else name_of(type(e))


def import_function(spec: str, folder: Path, field: str) -> Callable[..., Any]:
    """'module:function': a module file in `folder` if there is one (loaded afresh), else an
    importable module."""
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
    with loading(folder) as package:
        if path.is_file():
            module = _contained(lambda: importlib.import_module(f"{package}.{module_name}"), module_name, field)
        else:
            missing = f"no module {module_name!r}: no {relative} in {folder}, and none importable"
            module = _contained(lambda: importlib.import_module(module_name), module_name, field, missing)
    fn = _contained(lambda: getattr(module, function, None), module_name, field)  # a module __getattr__ is user code too
    if not callable(fn):
        raise HarnessError(field, f"{module_name!r} has no function {function!r}")
    return fn


_loads = itertools.count()
_load: ContextVar[tuple[Path, str] | None] = ContextVar("harness_load", default=None)  # (folder, its package)


@contextmanager
def loading(folder: Path) -> Iterator[str]:
    """One build's tool modules from `folder`, as one package: two tools of one module, or
    two modules importing one neighbour, share it. Yields the package's name."""
    folder = resolved(folder)
    if (load := _load.get()) is not None and load[0] == folder:  # a tool module that builds a scenario's tools
        yield load[1]
        return
    if _Fresh not in sys.meta_path:
        sys.meta_path.insert(0, _Fresh)
    package = f"harness_tools_{next(_loads)}"  # stays in sys.modules: a tool may import from it when called, or pickle a class of it
    spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
    spec.submodule_search_locations = [str(folder)]
    sys.modules[package] = importlib.util.module_from_spec(spec)
    token = _load.set((folder, package))
    try:
        yield package
    finally:
        _load.reset(token)


class _Fresh(importlib.machinery.SourceFileLoader):
    """On sys.meta_path, for the modules of a build's package (`harness_tools_N.helpers`):
    found in its folder as Python finds them (modules, packages, namespace packages), each
    compiled from its text, never a cached .pyc (an edit in the same second would pass for
    it), its absolute imports of its folder's modules (`import helpers`) resolved inside the
    package. So no other folder's build finds them, and no module outside the package is
    added to sys.modules or taken from it."""

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
        if not name.startswith("harness_tools_") or "." not in name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = cls(name, spec.origin)
        return spec

    def get_code(self, fullname: str) -> Any:
        return compile(self.get_data(self.path), self.path, "exec", dont_inherit=True)

    def exec_module(self, module: Any) -> None:
        package = module.__name__.partition(".")[0]

        def folder_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
            top = name.partition(".")[0]
            if level == 0 and _in_folder(package, top):
                found = builtins.__import__(f"{package}.{name}", globals, locals, fromlist, 0)
                return found if fromlist else sys.modules[f"{package}.{top}"]
            return builtins.__import__(name, globals, locals, fromlist, level)

        module.__builtins__ = _Builtins(__import__=folder_import)
        super().exec_module(module)


class _Builtins(dict):
    """A folder module's builtins: its own __import__, any other name as builtins has it when
    looked up (a test that patches `builtins.open` patches it for the tool too)."""

    def __missing__(self, name: str) -> Any:
        return builtins.__dict__[name]


def _in_folder(package: str, top: str) -> bool:
    """Is `top` a module of the package's folder, as Python would rank it there? A folder
    without __init__.py (`lib/`) counts only when no module elsewhere has that name, and a
    module already imported from that very file (the user's package, imported by a test) is
    the user's: imported twice, its exception classes would not match."""
    spec = importlib.machinery.PathFinder.find_spec(f"{package}.{top}", sys.modules[package].__path__)
    if spec is None:
        return False
    if spec.origin is None:
        elsewhere = importlib.machinery.PathFinder.find_spec(top)
        return elsewhere is None or elsewhere.origin is None
    try:
        imported = sys.modules[top].__spec__.origin if top in sys.modules else None
    except Exception:  # (sys.modules may hold anything)
        imported = None
    return imported != spec.origin


_ON_PATH = threading.RLock()  # sys.path is the process's; a batch's threads import one at a time


def import_object(ref: str, root: Path, field: str) -> Any:
    """'module:attribute' from an importable module (`root`, the project, is searched too)."""
    module_name, _, attribute = ref.partition(":")
    with _ON_PATH:
        added = str(root) not in sys.path
        if added:
            sys.path.insert(0, str(root))
        try:
            missing = f"no module {module_name!r} can be imported (from {root} or the environment)"
            module = _contained(lambda: importlib.import_module(module_name), module_name, field, missing)
        finally:
            if added:
                sys.path.remove(str(root))
    missing = object()
    value = _contained(lambda: getattr(module, attribute, missing), module_name, field)
    if value is missing:
        raise HarnessError(field, f"{module_name!r} has no attribute {attribute!r}")
    return value


def _contained(load: Callable[[], Any], module_name: str, field: str, missing: str = "") -> Any:
    """Import user code: its prints dropped, whatever it raises one HarnessError (`missing`
    when the module itself, or a package above it, does not exist)."""
    try:
        call = captured.start()  # this thread's prints, dropped
        try:
            return load()
        finally:
            captured.stop(call)
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        if missing and isinstance(e, ModuleNotFoundError) and e.name and (module_name + ".").startswith(e.name + "."):
            raise HarnessError(field, missing) from None
        said = regex.sub(r"harness_tools_[0-9]+\.?", "", describe(e))  # the build's package is harness's name, not the user's
        raise HarnessError(field, f"the module {module_name!r} failed to import ({said})") from None


def as_text(value: Any) -> str | None:
    """What a function returned, as text that is the same on every run: a str, a number or
    None as Python writes it, a list or dict as JSON; None for anything else."""
    if isinstance(value, str):
        return plain(value)
    if value is None or isinstance(value, (bool, int, float)):
        return plain(str(value))
    if isinstance(value, (list, tuple, dict)):
        import json  # (only a tool that returns a list or a dict needs it)

        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return None
    return None


TOOL_NAME = regex.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")  # what an Action line can name


def tool_function(fn: Any, name: str | None, where: str) -> str:
    """The name a function is called by as a tool (`name`, else its own), once it is one
    harness can call: a plain function, not async (harness never awaits a coroutine)."""
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
