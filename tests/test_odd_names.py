"""File names a user may have: not UTF-8 (Linux allows any bytes but "/" and NUL), longer
than the system allows, or empty. Each is shown escaped, is one line naming the argument
when it cannot be used, and never stops the other runs of a batch. Driven as a user would,
through a real process: its stdout and stderr are real files with a real encoding.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
NIMBUS = (ROOT / "transcripts" / "nimbus.toml").read_bytes()
LONG = "a" * 300  # longer than a file name may be (255 bytes on Linux)


def harness(*args: str | bytes, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, env=env, cwd=cwd, timeout=60)


def lines(output: bytes) -> list[str]:
    return output.decode("utf-8").splitlines()  # UTF-8, whatever the names were


def errors(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in lines(result.stderr) if line.startswith("error:")]


def folder_with_a_name_that_is_not_utf8(tmp_path: Path) -> Path:
    folder = tmp_path / "bn"
    folder.mkdir()
    (folder / "ok.toml").write_bytes(NIMBUS)
    with open(os.fsencode(folder) + b"/x\xffy.toml", "wb") as f:
        f.write(NIMBUS)
    return folder


def test_a_batch_with_a_scenario_named_in_bytes_that_are_not_utf8_goes_on_and_prints_its_summary(tmp_path):
    folder_with_a_name_that_is_not_utf8(tmp_path)
    result = harness("run", "bn", "--save-dir", "out", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert errors(result) == ["error: bn/x\\xffy.toml: its file name is not UTF-8, and a saved run names its scenario in UTF-8 text; rename the file to save its run"]
    rows = lines(result.stdout)
    assert rows[1].split()[:2] == ["ok", "final_answer"] and rows[2].startswith("x\\xffy ")
    assert rows[-1] == "2 runs: 1 final_answer, 1 not run"
    assert os.listdir(tmp_path / "out") == ["ok.txt"]
    assert "Traceback" not in result.stderr.decode()


def test_without_saving_it_runs_and_its_name_is_shown_escaped(tmp_path):
    folder_with_a_name_that_is_not_utf8(tmp_path)
    result = harness("run", "bn", "--report", "r.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout)[-1] == "2 runs: 2 final_answer"
    assert "[2/2] x\\xffy: final_answer, 3 steps" in result.stderr.decode()


def test_one_run_of_it_with_save_is_one_line_naming_it_and_writes_nothing(tmp_path):
    folder_with_a_name_that_is_not_utf8(tmp_path)
    result = harness("run", os.fsencode(tmp_path / "bn") + b"/x\xffy.toml", "--save", "s.txt", "-f", "tagged", cwd=tmp_path)
    assert result.returncode == 2
    [line] = lines(result.stderr)
    assert line.startswith("error: ") and line.endswith("bn/x\\xffy.toml: its file name is not UTF-8, and a saved run names its scenario in UTF-8 text; rename the file to save its run")
    assert not (tmp_path / "s.txt").exists()


def test_a_saved_file_and_an_output_named_in_bytes_that_are_not_utf8_are_named_escaped(tmp_path):
    saved = os.fsencode(tmp_path) + b"/r\xffn.txt"
    assert harness("run", "nimbus", "--save", saved, cwd=tmp_path).returncode == 0
    check = harness("replay", "--check", "r\udcffn.txt".encode("utf-8", "surrogateescape"), cwd=tmp_path)
    assert lines(check.stdout) == ["ok: replaying r\\xffn.txt gives the same transcript, byte for byte"]
    page = harness("export", saved, "--html", b"p\xff.html", cwd=tmp_path)
    assert page.returncode == 0 and lines(page.stderr) == ["wrote p\\xff.html"]


def test_a_name_too_long_to_look_up_is_one_line_naming_it(tmp_path):
    replayed = harness("replay", f"{LONG}.txt", cwd=tmp_path)
    assert replayed.returncode == 2
    assert lines(replayed.stderr) == [f"error: {LONG}.txt: cannot read the file (File name too long)"]
    for args in ([LONG], ["nimbus", "--save", f"{LONG}.txt"], ["nimbus", "calculator", "--save-dir", LONG]):
        ran = harness("run", *args, cwd=tmp_path)
        assert ran.returncode == 2 and len(lines(ran.stderr)) == 1, ran.stderr
        assert ran.stderr.decode().startswith("error: ") and "File name too long" in ran.stderr.decode()
        assert "writing the output" not in ran.stderr.decode()


def test_in_a_batch_a_name_too_long_is_one_line_and_the_other_runs_go_on(tmp_path):
    ran = harness("run", LONG, "nimbus", cwd=tmp_path)
    assert ran.returncode == 2
    assert errors(ran) == [f"error: {LONG}: cannot be looked up (File name too long)"]
    assert lines(ran.stdout)[-1] == "2 runs: 1 final_answer, 1 not run"
    (tmp_path / "saved").mkdir()
    assert harness("run", "nimbus", "--save", "saved/n.txt", cwd=tmp_path).returncode == 0
    replayed = harness("replay", f"{LONG}.txt", "saved", cwd=tmp_path)
    assert replayed.returncode == 2
    assert errors(replayed) == [f"error: {LONG}.txt: cannot read the file (File name too long)"]
    assert lines(replayed.stdout)[-1] == "2 runs: 1 final_answer, 1 not run"


def test_the_json_report_writes_a_name_that_is_not_utf8_escaped_as_the_summary_and_junit_do(tmp_path):
    import json

    folder_with_a_name_that_is_not_utf8(tmp_path)
    result = harness("run", "bn", "--report", "r.json", "--junit", "j.xml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_bytes().decode("utf-8", "strict"))
    names = [run["scenario"] for run in report["runs"]]
    for run in report["runs"]:  # a strict reader: every string is text that UTF-8 can hold
        for value in run.values():
            if isinstance(value, str):
                value.encode("utf-8", "strict")
    assert names == ["ok", "x\\xffy"]
    assert 'name="x\\xffy"' in (tmp_path / "j.xml").read_text(encoding="utf-8")
