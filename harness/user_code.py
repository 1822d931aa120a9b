"""User code, contained: loading a user's module, telling what it raised, and what it
returned as text.

Importing a Python tool (or an Agent a saved file names) may print, raise anything or fail
in its exception's own __str__: each is one HarnessError naming the field and the module,
and what it prints is dropped. A scenario's tool modules are loaded afresh on every build,
from their text, so an edit is seen by the next run of a long pytest session. While a
build loads them, the scenario's folder is on sys.path and is a package of harness's own
(so a module imports its neighbours absolutely or relatively); what the build found in
the folder leaves sys.modules as it ends.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import json
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from harness import captured
from harness.errors import HarnessError, made_of_ctrl_c
from harness.files import resolved


def plain(text: str) -> str:
    """`text` as an exact str, so a str subclass's own methods are never called on it again."""
    return str.__str__(text)


def message(e: BaseException) -> str:
    """str(e), even when the exception's own __str__ fails or returns a hostile str."""
    try:
        return plain(str(e))
    except BaseException as inner:
        if made_of_ctrl_c(inner):  # (as in every catch-all around user code: a Ctrl-C goes on as one)
            raise KeyboardInterrupt from inner
        return f"(its message could not be shown: {name_of(type(inner))})"


def name_of(kind: type) -> str:
    """A class's own name, whatever its metaclass says `__name__` is."""
    try:
        return plain(type.__dict__["__name__"].__get__(kind))
    except Exception:  # (type's own getter cannot fail on a class; its name may be no plain str)
        return "?"


def describe(e: BaseException) -> str:
    """'KeyError: 'b'', or the type's name alone when it has no message. A build's package
    name is harness's, not the user's, and new each build: it is left out, so that a tool's
    error reads the same on every run and a replay matches."""
    text = message(e)
    return _PACKAGE.sub("", f"{name_of(type(e))}: {text}" if text else name_of(type(e)))


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
            module = _from_file(path, package, module_name, field)
        else:
            missing = f"no module {module_name!r}: no {relative} in {folder}, and none importable"
            module = _contained(lambda: importlib.import_module(module_name), module_name, field, missing)
    fn = _contained(lambda: getattr(module, function, None), module_name, field)  # a module __getattr__ is user code too
    if not callable(fn):
        raise HarnessError(field, f"{module_name!r} has no function {function!r}")
    return fn


# sys.path and sys.modules are the whole process's, and a batch builds runs in threads: one
# load at a time, so that no import finds another folder's helpers (re-entrant: a tool
# module may build a scenario's tools as it loads).
_ON_PATH = threading.RLock()
_loads = itertools.count()
_load: ContextVar[tuple[Path, str] | None] = ContextVar("harness_load", default=None)  # (folder, its package)


@contextmanager
def loading(folder: Path) -> Iterator[str]:
    """One build's tool modules from `folder`, loaded together: two tools of one module, or
    two modules importing one neighbour, share it. Yields the folder's package's name."""
    folder = resolved(folder)
    if (load := _load.get()) is not None and load[0] == folder:
        yield load[1]
        return
    with _ON_PATH:
        package, before = f"harness_tools_{next(_loads)}", set(sys.modules)
        spec = importlib.util.spec_from_loader(package, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        sys.modules[package] = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(folder))
        token = _load.set((folder, package))
        try:
            yield package
        finally:
            _load.reset(token)
            # The build's own package stays if a tool module came into it (a tool may import
            # from it when called, or pickle a class of it); the folder's top-level modules it
            # brought in leave, so that no other folder's import finds them. A package imported
            # before the load (the user's own, by a test module) is not the load's to remove.
            for name in (new := set(sys.modules) - before):  # (while the folder is on sys.path: see _beside)
                top = name.partition(".")[0]
                if top not in before and (new == {package} if top == package else _beside(name, folder)):
                    del sys.modules[name]
            if str(folder) in sys.path:  # (a tool module may have taken it off itself)
                sys.path.remove(str(folder))


def _from_file(path: Path, package: str, module_name: str, field: str) -> Any:
    name, parent = f"{package}.{module_name}", module_name.rpartition(".")[0]
    if name in sys.modules:  # two tools of one module, in one load
        return sys.modules[name]
    if parent:  # its packages (pkg/__init__.py), imported as Python imports them
        _contained(lambda: importlib.import_module(f"{package}.{parent}"), module_name, field)
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path))
    # Compiled from its text, never a cached .pyc (an edit in the same second would pass for
    # it); as an import does: its own __future__ imports, its file's name, in sys.modules.
    code = _contained(lambda: compile(path.read_bytes(), module.__file__, "exec", dont_inherit=True), module_name, field)
    sys.modules[name] = module
    _contained(lambda: exec(code, module.__dict__), module_name, field)
    return module


def _beside(name: str, folder: Path) -> bool:
    """Was the module `name` found at the top of `folder` by its top name (as found, links
    not followed)? An installed module in a virtual environment under the folder is not. A
    namespace package (`lib/` without `__init__.py`) may also have portions elsewhere on
    sys.path (llama-cpp-python installs a `lib/`): one portion in the folder is enough."""
    try:  # its own names, asking no module __getattr__ of user code (sys.modules may hold anything)
        own = object.__getattribute__(sys.modules[name], "__dict__")
        found = [own.get("__file__"), *(own.get("__path__") or ())]
    except Exception:
        return False
    top = name.partition(".")[0]
    return any(
        isinstance(f, str) and Path(f).is_relative_to(folder) and Path(f).relative_to(folder).parts[0].partition(".")[0] == top
        for f in found
    )


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
    """Import user code: what it prints is dropped, whatever it raises is one HarnessError
    (`missing` when the module itself, or a package above it, does not exist)."""
    try:
        call = captured.start()  # this thread's prints, dropped
        try:
            return load()
        finally:
            captured.stop(call)
    except BaseException as e:
        if made_of_ctrl_c(e):
            raise KeyboardInterrupt from e
        if missing and isinstance(e, ModuleNotFoundError) and e.name and (module_name + ".").startswith(e.name + "."):
            raise HarnessError(field, missing) from None
        said = describe(e)
        raise HarnessError(field, f"the module {module_name!r} failed to import ({said})") from None


_PACKAGE = re.compile(r"harness_tools_[0-9]+\.?")


def as_text(value: Any) -> str | None:
    """What a function returned, as text that is the same on every run: a str, a number or
    None as Python writes it, a list or dict as JSON; None for anything else."""
    if isinstance(value, str):
        return plain(value)
    if value is None or isinstance(value, (bool, int, float)):
        return plain(str(value))
    if isinstance(value, (list, tuple, dict)):
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return None
    return None


TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")  # what an Action line can name


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
    try:  # what a tool is made of (harness.tools.from_function): its parameters and its docstring
        inspect.signature(fn), inspect.getdoc(fn)
    except BaseException as e:  # a builtin whose parameters Python cannot read, a __doc__ that raises, ...
        if made_of_ctrl_c(e):
            raise KeyboardInterrupt from e
        raise HarnessError(where, f"{shown}: its parameters or docstring cannot be read ({describe(e)}); a tool is a plain function") from None
    rule = "a letter or _, then letters, digits, _"
    if name is not None:
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise HarnessError(where, f"name={name!r:.80} is not a tool name ({rule})")
        return name
    own = getattr(fn, "__name__", None)
    if not isinstance(own, str) or not TOOL_NAME.fullmatch(own):  # `<lambda>`: no model could call it
        raise HarnessError(where, f"the function's name is {own!r:.80}, not a tool name ({rule}); give it one: from_function(fn, name=\"...\")")
    return own
