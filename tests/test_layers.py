"""The package's layers: every import goes down, none comes back, and the loop stays small.

    python tests/test_layers.py     prints the layers, bottom to top, with each module's lines

Every import counts for cycles: at module level, inside a function (the CLI's commands
import what they use when they run), and under `if TYPE_CHECKING:`. A module may import
modules of its own layer or of a layer below; only a type named in an annotation may come
from above (the loop names `tools.Registry`, the record `scenario.Scenario`, and loads
neither). LAYERS names every module of the package, so a new one must be given its place
(the README's layout says what each does).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "harness"

LAYERS = [  # bottom to top
    ("foundations", "errors decisions escape skim diff expect"),
    ("the buffer and its text", "transcript entry stop arguments dialects notices unseen events traffic"),
    ("the model boundary", "model"),
    ("reading and judging a reply", "judge governor reading limits"),
    ("the run record", "run_record"),
    ("the loop", "loop"),
    ("sources: files, user code, tools, scenarios", "files captured user_code tools workspace tool_specs prompts scenario source saved"),
    ("live models", "backends backends.urls backends.wire backends.connection backends.messages backends.server backends.local backends.spec"),
    ("runs from sources", "agent record batch protocol cassette proxy"),
    ("views", "render render.keys render.styled render.wrap render.json render.frames render.sent render.live render.markdown render.html render.stepper batch_report"),
    ("the command", "cli_io cli_batch cli_show cli_replay cli_run cli_proxy cli pytest_plugin __main__"),
]
LAYER = {f"harness.{m}": i for i, (_, modules) in enumerate(LAYERS) for m in modules.split()}

LOOP_MODULES, LOOP_LINES = 20, 3_500  # the loop's import closure, at most
FUNCTION_LINES, CLASS_LINES = 60, 200
# Functions and classes over the bounds that are owed a split; the list must match
# exactly, so a fix removes its line here and a new one cannot slip in.
OWED: set[str] = set()


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def type_checking_blocks(tree: ast.Module) -> set[int]:
    """The ids of the import nodes under `if TYPE_CHECKING:`."""
    blocks = [n for n in ast.walk(tree) if isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING"]
    return {id(node) for block in blocks for statement in block.body for node in ast.walk(statement)}


def imports(types: bool = True) -> dict[str, set[str]]:
    """module -> the harness modules it imports, anywhere in it (`types` False: but for
    those imported only under TYPE_CHECKING, to name a type)."""
    names = {module_name(p) for p in PACKAGE.rglob("*.py")}
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        found = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = set() if types else type_checking_blocks(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness"):
                found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        name = module_name(path)
        graph[name] = {m for m in found if m in names and m not in (name, "harness")}
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules on it, or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return None
        for imported in sorted(graph[module]):
            if found := visit(imported, [*path, module]):
                return found
        done.add(module)
        return None

    return next(filter(None, (visit(m, []) for m in sorted(graph))), None)


def test_there_is_no_import_cycle_counting_lazy_and_type_checking_imports():
    assert cycle(imports()) is None, " -> ".join(cycle(imports()) or ())


def test_every_module_has_a_layer_and_imports_only_its_own_layer_or_below():
    graph = imports(types=False)
    assert sorted(set(graph) - {"harness"} - set(LAYER)) == [], "a module with no place in LAYERS"
    assert sorted(set(LAYER) - set(graph)) == [], "LAYERS names a module that is gone"
    upward = [f"{m} -> {i}" for m, found in graph.items() if m != "harness" for i in sorted(found) if LAYER[i] > LAYER[m]]
    assert upward == []


def loop_closure() -> dict[str, int]:
    """Every harness module that `import harness.loop` runs (the top package aside), with its lines."""
    code = (
        "import json, sys, harness.loop\n"
        "print(json.dumps({m: sys.modules[m].__file__ for m in sys.modules if m.startswith('harness.')}))"
    )
    files = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    return {m: len(Path(f).read_text(encoding="utf-8").splitlines()) for m, f in files.items()}


def test_the_loops_import_closure_is_small_and_holds_no_source_backend_or_view():
    closure = loop_closure()
    assert len(closure) <= LOOP_MODULES and sum(closure.values()) <= LOOP_LINES, closure
    loop = LAYER["harness.loop"]
    assert [m for m in closure if LAYER[m] > loop] == []  # no TOML, user code, print capture, backend or view
    assert {"harness.reading", "harness.governor", "harness.stop", "harness.model", "harness.run_record"} <= set(closure)


def oversized() -> set[str]:
    out = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            kind = "class" if isinstance(node, ast.ClassDef) else "def" if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
            if kind and node.end_lineno - node.lineno + 1 > (CLASS_LINES if kind == "class" else FUNCTION_LINES):
                out.add(f"{path.relative_to(PACKAGE.parent).as_posix()}: {kind} {node.name}")
    return out


def test_no_function_is_over_60_lines_and_no_class_over_200():
    assert oversized() == OWED


if __name__ == "__main__":
    graph, closure = imports(), loop_closure()
    for i, (what, modules) in enumerate(LAYERS):
        print(f"{i:2} {what}: {modules}")
    print(f"the loop's closure: {len(closure)} modules, {sum(closure.values()):,} lines")
