"""The README's Python examples run as written, and its public API table names what
`harness` exports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import harness

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
EXAMPLES = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


@pytest.mark.parametrize("code", EXAMPLES, ids=[f"example-{i}" for i in range(len(EXAMPLES))])
def test_each_python_example_runs(code, capsys):
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out  # each example shows something


def test_every_exported_name_is_importable_and_documented():
    for name in harness.__all__:
        assert getattr(harness, name) is not None
        assert f"`{name}" in README, name


WORKED = re.search(r"<!-- worked-example -->\n(.*?)<!-- /worked-example -->", README, flags=re.DOTALL).group(1)


def steps(block: str) -> list[tuple[str, list[str]]]:
    """(command, the outputs the README quotes for it): `cmd  # says` and `#   says` lines."""
    out: list[tuple[str, list[str]]] = []
    for line in (raw.strip() for raw in block.splitlines()):
        if line.startswith("#"):
            out[-1][1].append(line.lstrip("# ").rstrip())
        elif line:
            command, _, says = line.partition("  # ")
            out.append((command.strip(), [says.strip()] if says.strip() else []))
    return out


def test_the_worked_example_s_cycle_gives_the_outputs_the_readme_quotes(tmp_path):
    # The README's lines, run as written in a copy of the checkout's example; the venv's
    # python and harness are this interpreter's.
    import shutil
    import subprocess
    import sys

    root = Path(__file__).parent.parent
    example = tmp_path / "tests" / "examples" / "support"
    shutil.copytree(root / "tests" / "examples" / "support", example, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    for name, run in (("python", ""), ("harness", " -m harness")):
        (venv / name).write_text(f'#!/bin/sh\nexec "{sys.executable}"{run} "$@"\n')
        (venv / name).chmod(0o755)
    folder = tmp_path
    cycle = steps(WORKED)
    assert len(cycle) >= 8
    for command, quoted in cycle:
        if command.startswith("cd "):
            folder = (folder / command[3:]).resolve()
            continue
        done = subprocess.run(["bash", "-c", command], cwd=folder, capture_output=True, text=True, timeout=120)
        output = done.stdout + done.stderr
        for says in quoted:
            assert says in output, f"{command!r} did not say {says!r}:\n{output}"
