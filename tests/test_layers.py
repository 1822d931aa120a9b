"""The package's import layers: no module imports, at load time, one that imports it back.

    python tests/test_layers.py     prints the layers, top to bottom

Imports inside functions (the CLI's commands, the backends) are lazy and not counted;
neither are those under `if TYPE_CHECKING:`.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "harness"


def imports() -> dict[str, set[str]]:
    """module -> the harness modules it imports at load time."""
    names = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__") for p in PACKAGE.rglob("*.py")}
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        found = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module level only
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness"):
                found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names} & names
        graph[name] = {m for m in found if m in names and m not in (name, "harness")}
    return graph


def layers(graph: dict[str, set[str]]) -> dict[str, int]:
    level: dict[str, int] = {}

    def of(module: str, path: tuple[str, ...] = ()) -> int:
        if module in path:
            raise AssertionError("import cycle: " + " -> ".join((*path, module)))
        if module not in level:
            level[module] = 1 + max((of(m, (*path, module)) for m in graph[module]), default=-1)
        return level[module]

    for module in graph:
        of(module)
    return level


def test_there_is_no_import_cycle_and_the_loop_sits_below_every_view():
    level = layers(imports())
    assert level["harness.loop"] > level["harness.governor"] > level["harness.decisions"]
    for view in ("harness.render.html", "harness.render.stepper", "harness.render.markdown", "harness.render.live"):
        assert level[view] > level["harness.run_record"]
    assert level["harness.values"] == 0 and imports()["harness.decisions"] <= {"harness.values"}  # the decision values stand on nothing else


if __name__ == "__main__":
    level = layers(imports())
    for n in sorted(set(level.values()), reverse=True):
        print(n, " ".join(sorted(m.removeprefix("harness.") for m, v in level.items() if v == n)))
