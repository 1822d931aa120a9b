"""A file name the system takes (up to 255 bytes) can be saved: the temporary file a write
goes through first has a short name of its own, so it fits wherever the final name fits.
Through the command: --save, --save-dir (a scenario's name plus .txt), --report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SHIPPED = Path(__file__).parents[1] / "transcripts"


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=cwd, timeout=60)


@pytest.mark.parametrize("length", [245, 251])  # the file name's bytes, with .txt: 249 and 255
def test_save_writes_a_name_of_up_to_255_bytes(tmp_path, length):
    name = "n" * length + ".txt"
    result = harness("run", "nimbus", "--save", name, "-f", "tagged", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / name).read_text().startswith("# harness transcript v1\n")
    assert os.listdir(tmp_path) == [name]  # no temporary file left
    again = harness("replay", name, "--check", cwd=tmp_path)  # and it is replaced as well as written
    assert again.returncode == 0, again.stderr


def test_save_dir_and_report_write_names_of_254_and_255_bytes(tmp_path):
    scenario = "s" * 250  # its file: 255 bytes; its saved run: 254
    shutil.copy(SHIPPED / "nimbus.toml", tmp_path / f"{scenario}.toml")
    (tmp_path / "out").mkdir()
    report = "r" * 250 + ".json"
    result = harness("run", f"{scenario}.toml", "calculator", "--save-dir", "out", "--report", report, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["calculator.txt", f"{scenario}.txt"]
    assert (tmp_path / report).read_text().startswith("{\n  \"harness\": \"batch report v1\"")
