"""`harness run` with several scenarios: the same runs whatever --jobs is, a summary in
scenario order, reports CI reads, exit codes, and a broken scenario among good ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import regex
from typer.testing import CliRunner

from harness.cli import app
from harness.saved import load_record
from tests.test_stepper import HARNESS, tmux  # noqa: F401  (tmux is a fixture: a terminal of its own)

runner = CliRunner()
ROOT = Path(__file__).parent.parent

CALC = '''question = "What is {a} + {b}?"
{more}
completions = [
"""Thought: I add them.
Action: calculator({a} + {b})
""",
"""Thought: Done.
Final Answer: {answer}
""",
]

[tools.calculator]
'''


def scenario(folder: Path, name: str, a: int = 1, b: int = 2, answer: str | None = None, more: str = "") -> Path:
    path = folder / f"{name}.toml"
    path.write_text(CALC.format(a=a, b=b, answer=answer if answer is not None else a + b, more=more), encoding="utf-8")
    return path


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


def report_without_times(path: Path, folder: Path) -> list[dict]:
    runs = json.loads(path.read_text(encoding="utf-8"))["runs"]
    for run in runs:
        run.pop("seconds")
        if run["transcript"]:
            run["transcript"] = str(Path(run["transcript"]).relative_to(folder))
    return runs


def test_a_folder_gives_the_same_transcripts_and_summary_whatever_jobs_is(tmp_path):
    """The shipped folder (every demo: canceled, model_error, limits) with --jobs 1 and 4."""
    out = {}
    for jobs in ("1", "4"):
        folder = tmp_path / f"j{jobs}"
        result = invoke("run", "transcripts", "--jobs", jobs, "--save-dir", str(folder), "--report", str(tmp_path / f"r{jobs}.json"))
        assert result.exit_code == 3, result.output  # model-error.toml ends in model_error
        out[jobs] = (
            {p.name: p.read_bytes() for p in folder.iterdir()},
            report_without_times(tmp_path / f"r{jobs}.json", folder),
            [line.split()[0] for line in result.stdout.splitlines()[1:-1]],
        )
    shipped = sorted(p.stem for p in (ROOT / "transcripts").glob("*.toml"))
    assert out["1"] == out["4"]
    files, runs, rows = out["4"]
    assert rows == shipped == [r["scenario"] for r in runs]  # scenario order, not finishing order
    assert sorted(files) == [f"{name}.txt" for name in shipped]
    # Each file is what `harness run NAME --save` writes.
    single = tmp_path / "single.txt"
    assert invoke("run", "transcripts/nimbus.toml", "--save", str(single), "-f", "tagged").exit_code == 0
    assert files["nimbus.txt"] == single.read_bytes()


def test_a_broken_scenario_is_one_line_naming_it_the_others_run_and_the_exit_is_2(tmp_path):
    scenario(tmp_path, "a")
    (tmp_path / "b.toml").write_text('question = "x"\nmax_steps = "many"\n', encoding="utf-8")
    scenario(tmp_path, "c", 3, 4)
    result = invoke("run", str(tmp_path), "--save-dir", str(tmp_path / "out"))
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {tmp_path / 'b.toml'}: max_steps: must be a whole number, 0 or more"]
    assert "Traceback" not in result.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.txt", "c.txt"]
    rows = result.stdout.splitlines()
    assert rows[2].split()[:2] == ["b", "not"] and rows[3].split()[:4] == ["c", "final_answer", "2", "7"]
    assert rows[-1] == "3 runs: 2 final_answer, 1 not run"


def test_a_fifo_or_a_broken_link_in_a_folder_is_named_never_skipped_unsaid(tmp_path):
    scenario(tmp_path, "a")
    os.mkfifo(tmp_path / "fifo.toml")  # read, it would hang: refused by its kind
    (tmp_path / "gone.toml").symlink_to(tmp_path / "moved.toml")
    result = invoke("run", str(tmp_path))
    errors = sorted(line for line in result.stderr.splitlines() if line.startswith("error:"))
    assert result.exit_code == 2 and len(errors) == 2, result.stderr
    assert "fifo.toml: is not a regular file" in errors[0] and f"gone.toml: is a link to {str(tmp_path / 'moved.toml')!r}, which does not exist" in errors[1]
    assert result.stdout.splitlines()[-1] == "3 runs: 1 final_answer, 2 not run"


def test_a_folder_is_searched_but_its_hidden_folders_so_run_dot_never_walks_into_venv(tmp_path):
    work = tmp_path / ".work"  # a folder named itself is searched, hidden or not
    for folder in (work, work / "sub", work / ".venv" / "lib", work / ".git"):
        folder.mkdir(parents=True)
        scenario(folder, "a" if folder.name != "sub" else "b")
    (work / "pyproject.toml").write_text('[project]\nname = "mine"\n', encoding="utf-8")  # no scenario's field: no scenario
    (work / "sub" / "broken.toml").write_text('qusetion = "q"\nmax_steps = 1\n', encoding="utf-8")  # a scenario's mistake
    result = invoke("run", str(work), "--save-dir", str(tmp_path / "out"))
    assert result.exit_code == 2 and result.stdout.splitlines()[-1] == "3 runs: 2 final_answer, 1 not run", result.output
    assert f"note: skipped {work / 'pyproject.toml'}: none of its keys is a scenario's field\n" in result.stderr
    assert "qusetion: unknown field" in result.stderr and "project: unknown field" not in result.stderr
    (work / "sub" / "broken.toml").unlink()
    only = tmp_path / "only"  # a folder of such files alone holds no scenario: an error, never an empty batch that passes
    only.mkdir()
    (only / "pyproject.toml").write_text('[project]\nname = "mine"\n', encoding="utf-8")
    assert invoke("run", str(only)).exit_code == 2
    invoke("run", str(work), "--save-dir", str(work / "out"))
    (work / ".old").mkdir()
    (work / "out" / "a.txt").rename(work / ".old" / "a.txt")
    replayed = invoke("replay", str(work))
    assert replayed.exit_code == 0 and replayed.stdout.splitlines()[-1] == "1 run: 1 final_answer", replayed.output
    assert "b.txt" in replayed.stdout and ".old" not in replayed.stdout


def test_junit_is_xml_ci_reads_model_error_is_an_error_and_fail_on_makes_failures(tmp_path):
    scenario(tmp_path, "good")
    scenario(tmp_path, "short", more="max_steps = 1")
    scenario(tmp_path, "broken", more='model_error = { step = 2, message = "HTTP 503 \\u001b[31m" }')
    junit = tmp_path / "junit.xml"
    result = invoke("run", str(tmp_path), "--junit", str(junit), "--fail-on", "max_steps")
    assert result.exit_code == 3, result.output  # model_error comes before --fail-on
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert sorted(cases) == ["broken", "good", "short"]
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("3", "1", "1")
    assert cases["broken"].find("error").get("type") == "model_error"
    assert "\x1b" not in junit.read_text(encoding="utf-8")  # the model's text is shown, never obeyed
    assert cases["short"].find("failure").get("type") == "max_steps"
    assert "stop reason: max_steps, 1 step\n" in cases["short"].find("system-out").text  # not "1 steps"
    assert cases["good"].find("error") is None and cases["good"].find("failure") is None


def test_fail_on_decides_exit_1_and_other_stop_reasons_pass(tmp_path):
    scenario(tmp_path, "good")
    scenario(tmp_path, "short", more="max_steps = 1")
    assert invoke("run", str(tmp_path)).exit_code == 0
    assert invoke("run", str(tmp_path), "--fail-on", "max_steps,format_error_limit").exit_code == 1
    wrong = invoke("run", str(tmp_path), "--fail-on", "max-steps")
    assert wrong.exit_code == 2 and wrong.stderr.startswith("error: --fail-on: 'max-steps' is not a stop reason")


def test_expect_marks_match_and_mismatch_and_fail_on_mismatch_exits_1(tmp_path):
    scenario(tmp_path, "right", 1, 2, more='expect = "3"')
    scenario(tmp_path, "wrong", 2, 2, answer="5", more='expect = "4"')
    scenario(tmp_path, "pattern", 3, 3, answer="It is 6.", more="expect_regex = '^It is [0-9]+\\.$'")
    report = tmp_path / "r.json"
    result = invoke("run", str(tmp_path), "--report", str(report))
    assert result.exit_code == 0
    marks = {line.split()[0]: line.split("  ")[-1] for line in result.stdout.splitlines()[1:-1]}
    assert marks == {"pattern": "match", "right": "match", "wrong": 'mismatch: expect "4"'}
    assert result.stdout.splitlines()[-1] == "3 runs: 3 final_answer · expect: 2 match, 1 mismatch"
    assert {r["scenario"]: r["expect"] for r in json.loads(report.read_text())["runs"]}["wrong"] == "mismatch"
    assert invoke("run", str(tmp_path), "--fail-on", "mismatch").exit_code == 1
    for name, said in (("right", "expect: match\n"), ("wrong", "expect: mismatch\n")):  # a single run says it too
        single = invoke("run", str(tmp_path / f"{name}.toml"), "-f", "tagged")
        assert single.exit_code == 0 and single.stderr == said and said not in single.stdout, single.output


def test_a_mismatch_says_what_was_expected_in_the_table_the_json_and_the_junit_file(tmp_path):
    """Issue 31, item 8: each report names the `expect` / `expect_regex` a run missed, and
    JUnit writes a missing final answer as `-`, as the table does, never Python's None."""
    scenario(tmp_path, "wrong", 2, 2, answer="5", more='expect = "4"')
    scenario(tmp_path, "pattern", 3, 3, answer="six", more="expect_regex = '^It is [0-9]+\\.$'")
    scenario(tmp_path, "short", more='max_steps = 1\nexpect = "3"')  # stops before any answer
    report, junit = tmp_path / "r.json", tmp_path / "j.xml"
    result = invoke("run", str(tmp_path), "--report", str(report), "--junit", str(junit), "--fail-on", "mismatch")
    assert result.exit_code == 1
    rows = {line.split()[0]: line.split("  ")[-1] for line in result.stdout.splitlines()[1:-1]}
    assert rows == {"pattern": 'mismatch: expect_regex "^It is [0-9]+\\\\.$"', "short": 'mismatch: expect "3"', "wrong": 'mismatch: expect "4"'}
    runs = {r["scenario"]: r for r in json.loads(report.read_text())["runs"]}
    assert runs["wrong"]["expected"] == {"expect": "4"} and runs["pattern"]["expected"] == {"expect_regex": "^It is [0-9]+\\.$"}
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["wrong"].find("failure").get("message") == 'mismatch: final answer "5"; expect "4"'
    assert cases["pattern"].find("failure").get("message") == 'mismatch: final answer "six"; expect_regex "^It is [0-9]+\\\\.$"'
    assert cases["short"].find("failure").get("message") == 'mismatch: no final answer; expect "3"'
    out = cases["short"].find("system-out").text
    assert "final answer: -\n" in out and "None" not in out and 'expect: 3' in out


def test_a_bad_expect_regex_is_one_line_naming_the_field(tmp_path):
    path = scenario(tmp_path, "bad", more="expect_regex = '('")
    result = invoke("run", str(path), "nimbus")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0].startswith(f"error: {path}: expect_regex: is not a regular expression")


def test_expect_and_expect_regex_together_are_one_line_naming_the_field(tmp_path):
    path = scenario(tmp_path, "both", more='expect = "3"\nexpect_regex = "3"')
    result = invoke("run", str(path), "nimbus")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0].startswith(f"error: {path}: expect_regex: goes instead of expect")


@pytest.mark.parametrize("given", ["", " , "])
def test_a_fail_on_that_names_nothing_is_a_bad_argument(tmp_path, given):
    scenario(tmp_path, "a")
    result = invoke("run", str(tmp_path), "--fail-on", given)
    assert result.exit_code == 2 and result.stderr == "error: --fail-on: names no stop reason (give REASON,... or mismatch)\n"


def test_plain_progress_is_one_line_per_finished_run_on_stderr(tmp_path):
    scenario(tmp_path, "a")
    scenario(tmp_path, "b", more="max_steps = 1")
    scenario(tmp_path, "c", more='model_error = { step = 1, message = "HTTP 503: loading" }')
    result = invoke("run", str(tmp_path / "a.toml"), str(tmp_path / "b.toml"), str(tmp_path / "c.toml"))
    lines = sorted(line.split(" ", 1)[1] for line in result.stderr.splitlines() if line.startswith("["))
    assert [regex.sub(r", [0-9]+[.][0-9]{2} s\b", "", line) for line in lines] == [
        "a: final_answer, 2 steps",
        "b: max_steps, 1 step",
        "c: model_error, 0 steps: HTTP 503: loading",
    ]


def test_save_dir_never_replaces_a_file_harness_did_not_write(tmp_path):
    scenario(tmp_path, "a")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("my notes\n", encoding="utf-8")
    result = invoke("run", str(tmp_path / "a.toml"), "nimbus", "--save-dir", str(out))
    assert result.exit_code == 2
    assert result.stderr == f"error: --save-dir {out / 'a.txt'}: the file exists and harness did not write it; not overwriting it\n"
    assert (out / "a.txt").read_text(encoding="utf-8") == "my notes\n" and not (out / "nimbus.txt").exists()


def test_options_that_show_one_run_are_refused_with_several(tmp_path):
    for option, message in (("--save=x.txt", "--save: goes with one scenario; use --save-dir DIR"), ("--cost", "--cost: goes with one scenario")):
        result = invoke("run", "nimbus", "calculator", option)
        assert result.exit_code == 2 and result.stderr.startswith(f"error: {message}")


def test_save_and_save_dir_together_are_refused_even_for_one_scenario(tmp_path):
    result = invoke("run", "nimbus", "--save", str(tmp_path / "a.txt"), "--save-dir", str(tmp_path / "d"))
    assert result.exit_code == 2 and result.stderr == "error: --save: and --save-dir both say where to save; give one of them\n"
    assert list(tmp_path.iterdir()) == []


def test_a_tool_that_changes_the_working_folder_moves_nothing_of_a_batch(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "m1.py").write_text(f'import os\n\ndef go(x):\n    """Go."""\n    os.chdir({str(elsewhere)!r})\n    return "moved"\n', encoding="utf-8")
    for name in ("s", "t"):
        body = 'question = "q?"\ncompletions = ["Action: go(1)\\n", "Final Answer: done\\n"]\n[tools.go]\npython = "m1:go"\n'
        (tmp_path / "runs" / f"{name}.toml").write_text(body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = subprocess.run([sys.executable, "-m", "harness", "run", "runs", "--save-dir", "out", "--report", "r.json"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["s.txt", "t.txt"] and (tmp_path / "r.json").is_file()
    assert list(elsewhere.iterdir()) == [] and "wrote r.json" in result.stderr


def test_an_option_that_shows_one_run_names_the_option_that_made_a_batch(tmp_path):
    result = invoke("run", "nimbus", "--save-dir", str(tmp_path / "d"), "--format", "json")
    assert result.exit_code == 2
    assert result.stderr == "error: --format: shows one run, and --save-dir makes this a batch (a summary of runs); give one of them\n"


def test_a_save_dir_that_is_a_looping_or_broken_link_says_so(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    for name in ("loop", "gone"):
        result = invoke("run", "nimbus", "calculator", "--save-dir", str(tmp_path / name))
        assert result.exit_code == 2 and result.stderr == f"error: --save-dir {tmp_path / name}: is a link that loops or leads nowhere\n"


def test_a_saved_run_of_a_batch_loads_and_replays(tmp_path):
    scenario(tmp_path, "a")
    out = tmp_path / "out"
    assert invoke("run", str(tmp_path / "a.toml"), "calculator", "--save-dir", str(out)).exit_code == 0
    assert load_record((out / "a.txt").read_text(encoding="utf-8")).final_answer == "3"
    again = invoke("replay", str(out / "a.txt"), "--check")
    assert again.exit_code == 0, again.output


def test_on_a_terminal_progress_is_a_bar_with_the_counts_and_stdout_keeps_the_summary(tmp_path, tmux):
    done, summary = tmp_path / "done", tmp_path / "summary.txt"
    total = len(list((ROOT / "transcripts").glob("*.toml")))
    term = tmux(160, 20, f"{HARNESS} run transcripts --jobs 2 > {summary}; echo $? > {done}")
    for _ in range(100):
        if done.exists() and done.read_text().strip():
            break
        time.sleep(0.1)
    assert done.read_text().strip() == "3"  # model-error.toml
    screen = "\n".join(term.screen())
    assert regex.search(rf"runs .*{total}/{total} .* running 0 · 1 canceled, [0-9]+ final_answer, ", screen), screen
    assert "[1/" not in screen  # no plain lines on a terminal
    assert summary.read_text(encoding="utf-8").splitlines()[0].startswith("scenario")


SHOUT = '''import time


def shout(word):
    """Print a word, slowly."""
    for _ in range(20):
        print(word)
        time.sleep(0.002)
    return "done " + word
'''


def test_what_a_tool_prints_stays_in_its_own_run_when_runs_share_the_process(tmp_path):
    """sys.stdout is one per process: with runs in threads, each tool's print still reaches
    its own observation only, and the summary still reaches stdout."""
    import subprocess
    import sys

    (tmp_path / "tools.py").write_text(SHOUT, encoding="utf-8")
    for i in range(6):
        completions = f'["Thought: shout.\\nAction: shout(w{i})\\n", "Thought: done.\\nFinal Answer: w{i}\\n"]'
        (tmp_path / f"w{i}.toml").write_text(
            f'question = "Shout w{i}."\ncompletions = {completions}\n\n[tools.shout]\npython = "tools:shout"\n', encoding="utf-8"
        )
    out = tmp_path / "out"
    command = [sys.executable, "-m", "harness", "run", str(tmp_path), "--jobs", "6", "--save-dir", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "6 runs: 6 final_answer"
    for i in range(6):
        record = load_record((out / f"w{i}.txt").read_text(encoding="utf-8"))
        observation = next(s.text for s in record.transcript.spans if s.author == "code" and "Observation" in s.text)
        assert observation == "Observation: " + f"w{i}\n" * 20 + f"done w{i}\n", observation


def test_two_scenarios_of_one_name_are_refused_before_anything_runs(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    scenario(tmp_path / "a", "same")
    scenario(tmp_path / "b", "same")
    out = tmp_path / "out"
    result = invoke("run", str(tmp_path / "a"), str(tmp_path / "b"), "--save-dir", str(out))
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: --save-dir {out}: {tmp_path / 'a' / 'same.toml'} and {tmp_path / 'b' / 'same.toml'} would both be saved as same.txt\n"
    )
    assert not out.exists() and result.stdout == ""


def test_reports_replace_only_reports_harness_wrote(tmp_path):
    scenario(tmp_path, "a")
    report, junit = tmp_path / "r.json", tmp_path / "j.xml"
    assert invoke("run", str(tmp_path / "a.toml"), "--report", str(report), "--junit", str(junit)).exit_code == 0
    assert invoke("run", str(tmp_path / "a.toml"), "--report", str(report), "--junit", str(junit)).exit_code == 0  # ours: replaced
    mine = tmp_path / "mine.json"
    mine.write_text("{}\n", encoding="utf-8")
    refused = invoke("run", str(tmp_path / "a.toml"), "--report", str(mine))
    assert refused.exit_code == 2 and "harness did not write it; not overwriting it" in refused.stderr
    assert mine.read_text(encoding="utf-8") == "{}\n" and refused.stdout == ""


def test_run_options_apply_to_every_run_of_a_batch(tmp_path):
    scenario(tmp_path, "a")
    scenario(tmp_path, "b")
    result = invoke("run", str(tmp_path), "--max-steps", "1")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "2 runs: 2 max_steps"


def test_a_file_name_cannot_forge_a_row_of_the_summary_or_a_line_of_progress(tmp_path):
    scenario(tmp_path, "a\n3 runs: 3 final_answer\x1b[2J")
    result = invoke("run", str(tmp_path))
    rows = result.stdout.splitlines()
    assert len(rows) == 3 and rows[1].startswith("a␊3 runs: 3 final_answer␛[2J ")
    assert rows[-1] == "1 run: 1 final_answer"
    assert [line for line in result.stderr.splitlines() if line.startswith("[")][0].startswith("[1/1] a␊3 runs")


def test_a_long_name_keeps_the_summary_narrow_and_its_end_in_view(tmp_path):
    scenario(tmp_path, "x" * 232 + "-the-end")  # (a file name of 245 bytes: most file systems hold 255)
    scenario(tmp_path, "b")
    rows = invoke("run", str(tmp_path)).stdout.splitlines()
    row = next(r for r in rows if "the-end" in r)
    assert max(map(len, rows)) < 200 and row.startswith("…x") and "x-the-end " in row


def test_a_tab_in_an_answer_cannot_move_the_summary_s_columns(tmp_path):
    scenario(tmp_path, "a", answer="x\ty")
    scenario(tmp_path, "b")
    rows = invoke("run", str(tmp_path)).stdout.splitlines()
    assert "\t" not in "".join(rows) and "x␉y" in rows[1]
    assert rows[1].index("x␉y") == rows[2].index("3")  # the answer column starts where the other row's does


def test_a_batch_says_which_recordings_in_its_save_dir_it_replaced(tmp_path, monkeypatch):
    """Issue 31, item 13: a recipe that reuses a folder never replaces recordings unsaid."""
    scenario(tmp_path, "a")
    scenario(tmp_path, "b")
    monkeypatch.chdir(tmp_path)
    first = invoke("run", "a.toml", "--save-dir", "recorded")
    assert first.exit_code == 0 and "replaced" not in first.stderr  # a new file replaces nothing
    second = invoke("run", "a.toml", "b.toml", "--save-dir", "recorded")
    assert second.exit_code == 0, second.output
    assert [line for line in second.stderr.splitlines() if line.startswith("replaced")] == [
        f"replaced {Path('recorded') / 'a.txt'} (it held an earlier run)"
    ]
