"""`harness replay A B DIR`: many saved transcripts replayed as one is, through the batch's
threads (--jobs), with its progress, summary and exit codes; one file is shown as before.
And a single live run off a terminal says on stderr when each model call ends."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import os
from pathlib import Path

import regex
from typer.testing import CliRunner

from harness.cli import app
from tests.loopback import FakeServer, Reply, sse, text
from tests.test_batch_server import ENV, harness
from tests.test_stepper import HARNESS, tmux  # noqa: F401  (tmux is a fixture: a terminal of its own)

runner = CliRunner()
ROOT = Path(__file__).parent.parent
SECONDS = regex.compile(r"\b[0-9]+[.][0-9]{2}( s)?\b")  # the one column that differs from run to run


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


def recorded(folder: Path) -> list[Path]:
    """Every shipped scenario run and saved into `folder` (canceled and model_error too)."""
    assert invoke("run", "transcripts", "--save-dir", str(folder)).exit_code == 3  # model-error.toml
    return sorted(folder.glob("*.txt"))


def test_a_folder_replays_to_the_same_summary_and_checks_whatever_jobs_is(tmp_path):
    saved = recorded(tmp_path / "out")
    out = {}
    for jobs in ("1", "4"):
        result = invoke("replay", str(tmp_path / "out"), "--check", "--jobs", jobs)
        assert result.exit_code == 0, result.output  # a recorded model_error replays to itself: no failure
        lines = sorted(SECONDS.sub("S", line.split("] ", 1)[1]) for line in result.stderr.splitlines())  # finishing order varies
        out[jobs] = (SECONDS.sub("S", result.stdout), lines)
    assert out["1"] == out["4"]
    rows = out["4"][0].splitlines()
    assert rows[0].split()[0] == "transcript" and rows[0].split()[-1] == "check"
    assert [r.split()[0] for r in rows[1:-1]] == [str(p) for p in saved]  # the files' order, not finishing order
    assert all(r.split()[-1] == "same" for r in rows[1:-1])
    assert rows[-1].endswith(f"· check: {len(saved)} same")
    progress = out["4"][1]
    assert len(progress) == len(saved) and all(line.endswith("same as the file") or "same as the file:" in line for line in progress)


def test_one_file_is_replayed_as_it_always_was(tmp_path):
    path = recorded(tmp_path / "out")[0]
    alone = invoke("replay", str(path), "--check")
    assert (alone.exit_code, alone.stdout) == (0, f"ok: replaying {path} gives the same transcript, byte for byte\n")
    assert invoke("replay", str(path), "--check", "--jobs", "4").stdout == alone.stdout
    assert invoke("replay", str(path), "-f", "tagged").stdout == path.read_text(encoding="utf-8")


def test_a_broken_link_or_a_fifo_in_a_folder_is_named_never_skipped_unsaid(tmp_path):
    saved = recorded(tmp_path / "out")
    (tmp_path / "out" / "gone.txt").symlink_to(tmp_path / "moved.txt")
    os.mkfifo(tmp_path / "out" / "pipe.txt")  # read, it would hang: refused by its kind
    result = invoke("replay", str(tmp_path / "out"), "--check")
    errors = sorted(line for line in result.stderr.splitlines() if line.startswith("error:"))
    assert result.exit_code == 2 and len(errors) == 2, result.output
    assert "gone.txt: is a link to" in errors[0] and "pipe.txt: is not a regular file" in errors[1]
    assert result.stdout.splitlines()[-1].startswith(f"{len(saved) + 2} runs: ")


def test_a_broken_file_is_one_line_naming_it_the_others_replay_and_the_exit_is_2(tmp_path):
    saved = recorded(tmp_path / "out")
    broken = tmp_path / "out" / "broken.txt"
    broken.write_text(saved[0].read_text(encoding="utf-8").replace("| ", "|", 3), encoding="utf-8")
    (tmp_path / "out" / "notes.txt").write_text("not a transcript: left out of a folder\n", encoding="utf-8")
    missing = tmp_path / "missing.txt"
    result = invoke("replay", str(tmp_path / "out"), str(missing), "--check", "--jobs", "3")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert [e.split(": ")[1].split(":")[0] for e in errors] == [str(broken), str(missing)]
    assert errors[1] == f"error: {missing}: no such file"
    rows = {r.split()[0]: r.split()[1] for r in result.stdout.splitlines()[1:-1]}
    assert rows.pop(str(broken)) == rows.pop(str(missing)) == "not"  # run
    assert sorted(rows) == [str(p) for p in saved] and "notes.txt" not in result.stdout
    assert result.stdout.splitlines()[-1].startswith(f"{len(saved) + 2} runs: ")


def test_a_folders_transcript_of_another_save_format_version_is_named_not_passed_by(tmp_path):
    saved = recorded(tmp_path / "out")
    future = tmp_path / "out" / "future.txt"
    future.write_text(saved[0].read_text(encoding="utf-8").replace("transcript v1", "transcript v2", 1), encoding="utf-8")
    result = invoke("replay", str(tmp_path / "out"), "--check")
    assert result.exit_code == 2, result.output
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        f"error: {future}:1: expected the header line '# harness transcript v1'"
    ]


def test_a_replay_that_differs_prints_its_diff_before_the_summary_and_the_exit_is_1(tmp_path):
    saved = recorded(tmp_path / "out")
    calculator = tmp_path / "out" / "calculator.txt"
    changed = calculator.read_text(encoding="utf-8").replace("code      | Observation: 303", "code      | Observation: 304")
    calculator.write_text(changed, encoding="utf-8")
    result = invoke("replay", str(tmp_path / "out"), "--check", "--jobs", "2")
    assert result.exit_code == 1, result.output
    diff, table = result.stdout.split("\ntranscript ", 1)
    assert diff.startswith(f"{calculator}: first difference in step 1") and "-code      | Observation: 304" in diff
    marks = {r.split()[0]: r.split()[-1] for r in table.splitlines()[1:-1]}
    assert marks.pop(str(calculator)) == "differs" and set(marks.values()) == {"same"}
    assert table.splitlines()[-1].endswith(f"· check: 1 differs, {len(saved) - 1} same")
    assert "pytest --harness-update" in result.stderr
    plain = invoke("replay", str(tmp_path / "out"))  # without --check a difference is no failure
    assert plain.exit_code == 0 and "check" not in plain.stdout


def test_options_that_show_one_replay_are_refused_with_several(tmp_path):
    saved = recorded(tmp_path / "out")
    result = invoke("replay", str(saved[0]), str(saved[1]), "-f", "tagged")
    assert (result.exit_code, result.stderr) == (2, "error: --format: goes with one file; several replays print a summary\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = invoke("replay", str(empty))
    assert nothing.exit_code == 2 and nothing.stderr.splitlines()[0] == f"error: {empty}: the folder holds no saved transcript (*.txt)"


def test_piped_progress_is_one_line_per_finished_replay_through_the_real_command(tmp_path):
    saved = recorded(tmp_path / "out")
    result = subprocess.run(harness("replay", "out", "--check", "--jobs", "2"), capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    lines, n = result.stderr.splitlines(), len(saved)
    assert [line.split(" ")[0] for line in lines] == [f"[{k}/{n}]" for k in range(1, n + 1)]  # in finishing order
    named = sorted(line.split("] ", 1)[1].split(":")[0] for line in lines)
    assert named == sorted(f"out/{p.name}" for p in saved)


def test_on_a_terminal_replays_show_the_bar_and_stdout_keeps_the_summary(tmp_path, tmux):
    saved = recorded(tmp_path / "out")
    done, summary = tmp_path / "done", tmp_path / "summary.txt"
    term = tmux(160, 20, f"{HARNESS} replay {tmp_path / 'out'} --check --jobs 2 > {summary}; echo $? > {done}")
    for _ in range(100):
        if done.exists() and done.read_text().strip():
            break
        time.sleep(0.1)
    assert done.read_text().strip() == "0"
    screen = "\n".join(term.screen())
    n = len(saved)
    assert regex.search(rf"runs .*{n}/{n} .* running 0 · 1 canceled, [0-9]+ final_answer, .*1 model_error, ", screen), screen
    assert "[1/" not in screen  # no plain lines on a terminal
    assert summary.read_text(encoding="utf-8").splitlines()[-1].endswith(f"check: {n} same")


def test_a_single_live_run_piped_says_each_model_call_as_it_ends(tmp_path):
    """Step, characters, seconds on stderr as each call ends: the second call is held by the
    server until the first call's line has been read."""
    first = "Thought: I add them.\nAction: calculator(1 + 2)\n"
    second = "Thought: Done.\nFinal Answer: 3\n"
    release = threading.Event()
    server = FakeServer()

    def answer(body: dict) -> Reply:
        if "calculator(1 + 2)" in body["prompt"]:
            assert release.wait(20)
            return Reply(chunks=sse(text(second), text("", "stop"), "[DONE]"))
        return Reply(chunks=sse(text(first), text("", "stop"), "[DONE]"))

    server.answer = answer
    (tmp_path / "sum.toml").write_text('question = "What is 1 + 2?"\n\n[tools.calculator]\n', encoding="utf-8")
    command = harness("run", "sum.toml", "--model", "openai:m", "--base-url", server.url, "-f", "tagged", "--save", "sum.txt")
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
        line = proc.stderr.readline()  # while the second call is still held
        assert regex.fullmatch(r"call 1: ([0-9]+) characters, [0-9]+[.][0-9]{2} s\n", line), line
        assert int(line.split()[2]) == len(first)
        release.set()
        stdout, rest = proc.communicate(timeout=30)
        again = harness("replay", "sum.txt", "--model", "openai:m", "--base-url", server.url, "--check")
        live_replay = subprocess.run(again, capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=60)
    finally:
        release.set()
        server.close()
    assert proc.returncode == 0, rest
    assert regex.fullmatch(rf"call 2: {len(second)} characters, [0-9]+[.][0-9]{{2}} s\nwrote sum.txt\n", rest), rest
    assert stdout == (tmp_path / "sum.txt").read_text(encoding="utf-8")  # stdout is still the transcript alone
    assert live_replay.returncode == 0, live_replay.stderr  # a live replay says its calls too
    assert [line.split(":")[0] for line in live_replay.stderr.splitlines()] == ["call 1", "call 2"]
    # A scripted run takes no time to read: it says nothing per call.
    scripted = subprocess.run(harness("run", "sum.toml", "-f", "tagged"), capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=60)
    assert scripted.returncode == 0 and scripted.stderr == ""


def test_a_saved_file_whose_overrides_are_bad_is_one_line_naming_the_field_alone_or_among_others(tmp_path):
    good = tmp_path / "good.txt"
    assert invoke("run", "calculator", "--save", str(good), "-f", "tagged").exit_code == 0
    bad = tmp_path / "bad.txt"
    assert invoke("run", "calculator", "--max-steps", "1", "--save", str(bad), "-f", "tagged").exit_code == 0
    bad.write_text(bad.read_text(encoding="utf-8").replace('"overrides": {"max_steps": 1}', '"overrides": {"max_steps": "many"}'), encoding="utf-8")
    line = f"error: {bad}: metadata source.overrides: max_steps: must be a whole number, 0 or more"
    alone = invoke("replay", str(bad), "--check")
    assert (alone.exit_code, alone.stderr) == (2, line + "\n")  # not a traceback
    among = invoke("replay", str(tmp_path), "--check")
    assert among.exit_code == 2 and [x for x in among.stderr.splitlines() if x.startswith("error:")] == [line]
    assert f"{good}  final_answer" in among.stdout


def test_ctrl_c_mid_replays_cancels_the_live_ones_running_and_prints_the_summary(tmp_path):
    from tests.test_batch_server import answer, scenarios

    server = FakeServer()
    server.answer, server.delay = answer, 1.5
    scenarios(tmp_path / "s", 4)
    assert invoke("run", str(tmp_path / "s"), "--save-dir", str(tmp_path / "out")).exit_code == 0  # scripted: no completions
    command = harness("replay", "out", "--model", "openai:m", "--base-url", server.url, "--jobs", "2", "--check")
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
        deadline = time.monotonic() + 20
        while len(server.requests) < 2 and time.monotonic() < deadline:  # both threads are in a call
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        server.close()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and stderr.splitlines()[-1] == "interrupted"
    assert stdout.splitlines()[-1] == "2 runs: 2 canceled · check: 2 differs · 2 not started (interrupted)"
    assert len(server.requests) == 2  # no replay started after Ctrl-C


def test_two_agents_imported_at_once_each_find_the_project_folder(tmp_path):
    """Replays in threads import the Agents their files name: one import must not take the
    project folder off sys.path while another is still importing from it. Here `quick`
    needs its sibling after `slow`'s import has ended; each gets its folder on sys.path."""
    import types

    from harness.user_code import import_object

    events = types.SimpleNamespace(slow=threading.Event(), go=threading.Event(), quick=threading.Event(), slow_done=threading.Event())
    sys.modules["race_events"] = events  # type: ignore[assignment]
    (tmp_path / "race_slow.py").write_text("import race_events as e\ne.slow.set()\ne.go.wait(5)\nx = 1\n", encoding="utf-8")
    (tmp_path / "race_quick.py").write_text(
        "import race_events as e\ne.quick.set()\ne.slow_done.wait(5)\nimport race_sibling\nx = race_sibling.x\n", encoding="utf-8"
    )
    (tmp_path / "race_sibling.py").write_text("x = 2\n", encoding="utf-8")
    got: dict[str, object] = {}

    def slow() -> None:
        got["slow"] = import_object("race_slow:x", tmp_path, "slow")
        events.slow_done.set()

    def quick() -> None:
        try:
            got["quick"] = import_object("race_quick:x", tmp_path, "quick")
        except Exception as e:  # what the second replay would report
            got["quick"] = e

    try:
        a = threading.Thread(target=slow)
        a.start()
        assert events.slow.wait(5)  # slow is importing, its folder on sys.path
        b = threading.Thread(target=quick)
        b.start()
        events.quick.wait(0.5)  # quick starts importing meanwhile (unless it has to wait its turn)
        events.go.set()
        a.join(10)
        b.join(10)
    finally:
        events.go.set()
        events.slow_done.set()
        for name in ("race_events", "race_slow", "race_quick", "race_sibling"):
            sys.modules.pop(name, None)
    assert got == {"slow": 1, "quick": 2}
    assert str(tmp_path) not in sys.path


def test_a_live_replay_whose_server_fails_exits_3_and_a_recorded_model_error_does_not(tmp_path):
    saved = recorded(tmp_path / "out")
    offline = invoke("replay", str(tmp_path / "out" / "model-error.txt"), str(saved[0]))
    assert offline.exit_code == 0, offline.output  # the file says the model failed: so does its replay
    server = FakeServer()
    server.reply = Reply(503, [b'{"error": {"message": "loading"}}'], content_type="application/json")
    try:
        live = runner.invoke(app, ["replay", str(saved[0]), str(saved[1]), "--model", "openai:m", "--base-url", server.url], env={"COLUMNS": "200", "NO_COLOR": "1", "HARNESS_API_KEY": "sk-test"})
    finally:
        server.close()
    assert live.exit_code == 3, live.output
    assert live.stdout.splitlines()[-1] == "2 runs: 2 model_error"
