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
