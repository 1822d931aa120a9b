"""A Python tool is user code; it must not take harness down with it (harness.captured).

Each misbehaviour runs through the command, with --save, --format json or a batch's
--report: the run goes on, the file is saved, and harness's own output stays what it says
it is (JSON parses, the tagged output is the saved transcript). The second half is how a
tool module is loaded: afresh on every build, its folder's neighbours with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app

pytest_plugins = ["pytester"]
runner = CliRunner()
FORMATS = ["rich", "tagged", "json", "events"]

TOOLS = '''import os


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no words")


class Custom(BaseException):
    pass


def exit_with(code):
    """Leave with SystemExit."""
    raise SystemExit(code) if code != "none" else SystemExit()


def generator_exit(x):
    """Raise GeneratorExit."""
    raise GeneratorExit("closed")


def custom(x):
    """Raise a BaseException of its own."""
    raise Custom("mine")


def unprintable(x):
    """Raise an exception whose str() raises."""
    raise Unprintable()


def chatty(x):
    """Print, then answer."""
    print("looking it up...")
    return "found " + x


def warns(x):
    """Warn on stderr (a title-setting escape too), then answer."""
    import sys

    sys.stderr.write("\\x1b]0;PWNED\\x07careful...\\n")
    return "found " + x


def wander(x):
    """Move the working folder."""
    os.chdir(os.path.dirname(os.path.abspath(__file__)) + "/elsewhere")
    return "moved"
'''


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


def command(folder: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`harness ARGS` as a process of its own, in `folder`: what reaches its stdout and stderr."""
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=folder, timeout=timeout)


def scenario(folder: Path, tool: str, arg: str = "\"q\"", module: str = "tools", source: str = TOOLS, calls: int = 1) -> Path:
    """s.toml in `folder`: `calls` actions calling the Python tool `tool` (with 1, 2, ... after
    the first, if more than one), then a final answer; the tool's module holds `source`."""
    (folder / "elsewhere").mkdir(parents=True, exist_ok=True)
    (folder / f"{module.replace('.', '/')}.py").parent.mkdir(parents=True, exist_ok=True)
    (folder / f"{module.replace('.', '/')}.py").write_text(source, encoding="utf-8")
    actions = [f"Action: {tool}({arg if i == 0 else i})\n" for i in range(calls)]
    lines = [
        'question = "q?"',
        f"completions = {json.dumps([*actions, 'Final Answer: done' + chr(10)])}",
        f"[tools.{tool}]",
        f'python = "{module}:{tool}"',
    ]
    path = folder / "s.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def observations(saved: str) -> list[str]:
    return [line for line in saved.splitlines() if line.startswith("code      | Observation:")]


def assert_output_is_what_it_says(fmt: str, stdout: str, saved: str) -> None:
    if fmt == "json":
        json.loads(stdout)
    elif fmt == "events":
        assert all(json.loads(line) for line in stdout.splitlines())
    elif fmt == "tagged":
        assert stdout == saved


# --- what a tool raises, prints or returns ----------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "tool, arg, observation",
    [
        ("exit_with", '"bye"', "Error: SystemExit: bye"),
        ("exit_with", '"none"', "Error: SystemExit"),
        ("exit_with", "0", "Error: SystemExit: 0"),
        ("generator_exit", "1", "Error: GeneratorExit: closed"),
        ("custom", "1", "Error: Custom: mine"),
        ("unprintable", "1", "Error: Unprintable: (its message could not be shown: RuntimeError)"),
        ("chatty", '"a"', "looking it up...\ncode      | found a"),
        ("warns", '"a"', "\x1b]0;PWNED\x07careful...\ncode      | found a"),
    ],
    ids=["systemexit-message", "systemexit-bare", "systemexit-0", "generatorexit", "baseexception", "str-raises", "print", "stderr"],
)
def test_whatever_a_tool_raises_or_prints_is_its_observation_and_the_run_is_saved(tmp_path, monkeypatch, fmt, tool, arg, observation):
    path = scenario(tmp_path, tool, arg)
    monkeypatch.chdir(tmp_path)
    result = invoke("run", str(path), "--save", "out.txt", "-f", fmt)
    assert result.exit_code == 0, result.output
    saved = (tmp_path / "out.txt").read_text(encoding="utf-8")
    assert f"code      | Observation: {observation}\n" in saved
    assert saved.endswith("model     | Final Answer: done\n")  # the run went on to its end
    assert "looking it up...\n" not in result.stdout.splitlines(True)  # never a loose line of harness's output
    assert_output_is_what_it_says(fmt, result.stdout, saved)
    assert result.stderr == "wrote out.txt\n"
    assert invoke("replay", "out.txt", "--check").exit_code == 0  # the observation replays, byte for byte


HOSTILE = '''class Sly(str):
    def __str__(self):
        raise RuntimeError("no str")

    def __format__(self, spec):
        raise RuntimeError("no format")

    def __eq__(self, other):
        raise RuntimeError("no eq")

    def __radd__(self, other):
        raise RuntimeError("no add")

    __hash__ = str.__hash__


class Named(type):
    @property
    def __name__(cls):
        raise RuntimeError("no name")


class Odd(Exception, metaclass=Named):
    def __str__(self):
        return Sly("odd")


def sly(x):
    """Answer with a str that fails as it is used."""
    return Sly("sly " + str(x))


def odd(x):
    """Raise what cannot be named."""
    raise Odd()
'''


def test_d_a_str_subclass_whose_methods_raise_is_plain_text_and_the_batch_writes_its_report(tmp_path):
    for name, tool in (("a", "sly"), ("b", "odd")):
        folder = tmp_path / "runs" / name
        folder.mkdir(parents=True)
        scenario(folder, tool, "1", source=HOSTILE).rename(folder / f"{name}.toml")
    result = command(tmp_path, "run", "runs", "--report", "r.json", "--save-dir", "out")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [run["stop_reason"] for run in report["runs"]] == ["final_answer", "final_answer"], report
    assert observations((tmp_path / "out" / "a.txt").read_text(encoding="utf-8")) == ["code      | Observation: sly 1"]
    assert observations((tmp_path / "out" / "b.txt").read_text(encoding="utf-8")) == ["code      | Observation: Error: Odd: odd"]


def test_a_tool_that_returns_what_is_not_text_is_told_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = scenario(tmp_path, "obj", source='def obj(x):\n    """An object."""\n    return object()\n')
    result = invoke("run", str(path), "-f", "tagged")
    assert result.exit_code == 0
    assert observations(result.stdout) == ["code      | Observation: Error: it returned object (an object), which is not text; return a str (or a number, a list or a dict of them)"]


# --- what a tool leaves behind (the six cases of issue 28, through the command) ---------

REBIND = 'import io, sys\n\ndef rebind(x):\n    """Point sys.stdout and sys.stderr elsewhere and leave them."""\n    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()\n    return "rebound"\n'
CLOSE = 'import sys\n\ndef close(x):\n    """Close sys.stdout and sys.stderr."""\n    print("before")\n    sys.stdout.close()\n    sys.stderr.close()\n    return "closed"\n'
AT_EXIT = 'import atexit, sys\n\ndef hook(x):\n    """Print at exit."""\n    atexit.register(print, "from an atexit hook")\n    atexit.register(lambda: sys.__stdout__.write("raw at exit"))\n    return "hooked"\n'
CLOSE_FD_2 = 'import os\n\ndef shut(x):\n    """Close file descriptors 1 and 2."""\n    os.close(2)\n    os.close(1)\n    return "shut"\n'


def test_a_a_tool_that_rebinds_sys_stdout_and_leaves_it_loses_no_json(tmp_path):
    path = scenario(tmp_path, "rebind", calls=2, source=REBIND)
    result = command(tmp_path, "run", str(path), "-f", "json", "--save", "out.txt")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)  # the whole JSON, and nothing else
    assert record["final_answer"] == "done" and result.stderr == "wrote out.txt\n"
    assert observations((tmp_path / "out.txt").read_text(encoding="utf-8")) == ["code      | Observation: rebound"] * 2


def test_b_a_tool_that_closes_sys_stdout_is_no_traceback_and_the_run_is_saved(tmp_path):
    path = scenario(tmp_path, "close", calls=2, source=CLOSE)
    result = command(tmp_path, "run", str(path), "-f", "tagged", "--save", "out.txt")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    saved = (tmp_path / "out.txt").read_text(encoding="utf-8")
    assert result.stdout == saved and saved.count("code      | Observation: before\ncode      | closed\n") == 2


def test_c_an_atexit_hook_a_tool_registers_never_adds_to_the_json(tmp_path):
    path = scenario(tmp_path, "hook", source=AT_EXIT)
    result = command(tmp_path, "run", str(path), "-f", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["final_answer"] == "done"
    assert "atexit" not in result.stdout + result.stderr


def test_e_a_tool_that_closes_fd_2_leaves_save_at_exit_0(tmp_path):
    path = scenario(tmp_path, "shut", source=CLOSE_FD_2)
    result = command(tmp_path, "run", str(path), "-f", "tagged", "--save", "out.txt")
    assert result.returncode == 0, result.stderr
    saved = (tmp_path / "out.txt").read_text(encoding="utf-8")
    assert result.stdout == saved and observations(saved) == ["code      | Observation: shut"]
    assert result.stderr == "wrote out.txt\n"  # harness's own stderr is its copy of fd 2


IGNORE_CTRL_C = (
    "import pathlib, signal, time\n\n"
    "def ignore(x):\n    \"\"\"Ignore Ctrl-C from now on.\"\"\"\n    signal.signal(signal.SIGINT, signal.SIG_IGN)\n    return 'ignored'\n\n"
    "def wait(x):\n    \"\"\"Say so, then wait.\"\"\"\n    pathlib.Path('waiting').touch()\n    time.sleep(30)\n    return 'waited'\n"
)


def test_f_a_tool_that_ignores_ctrl_c_leaves_it_working_for_the_rest_of_the_run(tmp_path):
    path = scenario(tmp_path, "ignore", source=IGNORE_CTRL_C)
    text = path.read_text(encoding="utf-8").replace('"Final Answer', '"Action: wait(1)\\n", "Final Answer')
    path.write_text(text + '[tools.wait]\npython = "tools:wait"\n', encoding="utf-8")
    code, err = interrupted(tmp_path, "run", str(path), "-f", "tagged", "--save", "out.txt")
    assert code == 130 and "Traceback" not in err, err
    assert '# stop_reason: "canceled"' in (tmp_path / "out.txt").read_text(encoding="utf-8")


def interrupted(folder: Path, *args: str) -> tuple[int, str]:
    """`harness ARGS` in `folder`, sent a Ctrl-C once a tool has made the file `waiting`: (exit code, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):
            if (folder / "waiting").exists():
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=15)[1]
        return proc.returncode, err
    finally:
        proc.kill()


TIME_OUT = (
    "import signal, threading, time\n\n"
    "def slow(x):\n    \"\"\"Wait at most 0.2 s.\"\"\"\n"
    "    timer = threading.Timer(0.2, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))\n    timer.start()\n"
    "    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        return 'timed out after 0.2 s'\n    return 'done'\n"
)


def test_a_tool_that_interrupts_itself_and_catches_it_goes_on_as_in_python(tmp_path):
    """A KeyboardInterrupt a tool catches is the tool's (a timeout made with a SIGINT to the
    main thread, here): the run goes on through the command as it does through the Python API."""
    path = scenario(tmp_path, "slow", source=TIME_OUT, calls=2)
    result = command(tmp_path, "run", str(path), "-f", "tagged", "--save", "out.txt")
    assert result.returncode == 0, result.stderr
    assert observations((tmp_path / "out.txt").read_text(encoding="utf-8")) == ["code      | Observation: timed out after 0.2 s"] * 2


@pytest.mark.parametrize("check", [[], ["--check"]])
def test_a_ctrl_c_during_a_replay_of_one_file_exits_130(tmp_path, check):
    """As `harness --help` says of every command; a recording that was itself canceled
    replays canceled and is no Ctrl-C (tests/test_interrupt.py)."""
    path = scenario(tmp_path, "wait", source=IGNORE_CTRL_C.replace("time.sleep(30)", "time.sleep(0)"))
    assert command(tmp_path, "run", str(path), "--save", "out.txt").returncode == 0
    (tmp_path / "tools.py").write_text(IGNORE_CTRL_C, encoding="utf-8")  # now the tool waits 30 s
    (tmp_path / "waiting").unlink()
    code, err = interrupted(tmp_path, "replay", "out.txt", *check)
    assert code == 130 and "Traceback" not in err, err


def test_a_real_ctrl_c_in_a_tool_still_cancels_the_run(tmp_path, monkeypatch):
    source = TOOLS + '\n\ndef stop(x):\n    """Ctrl-C."""\n    raise KeyboardInterrupt\n'
    path = scenario(tmp_path, "stop", source=source)
    monkeypatch.chdir(tmp_path)
    result = invoke("run", str(path), "--save", "out.txt", "-f", "tagged")
    assert result.exit_code == 130
    assert '# stop_reason: "canceled"' in (tmp_path / "out.txt").read_text(encoding="utf-8")
    assert os.getcwd() == str(tmp_path)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_tool_that_changes_the_working_folder_cannot_move_the_saved_file(tmp_path, monkeypatch, fmt):
    path = scenario(tmp_path, "wander")
    monkeypatch.chdir(tmp_path)
    result = invoke("run", str(path), "--save", "out.txt", "-f", fmt)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.txt").is_file() and not (tmp_path / "elsewhere" / "out.txt").exists()
    assert result.stderr == "wrote out.txt\n"


def test_a_tool_that_changes_the_working_folder_loses_no_later_replay_of_a_batch(tmp_path):
    path = scenario(tmp_path, "cd", source='import os\n\ndef cd(x):\n    """Go elsewhere."""\n    os.chdir("/")\n    return "moved"\n')
    (tmp_path / "saved").mkdir()
    for name, target in (("a1", str(path)), ("a2", "nimbus"), ("a3", "nimbus")):
        done = command(tmp_path, "run", target, "--save", f"saved/{name}.txt")
        assert done.returncode == 0, done.stderr
    result = command(tmp_path, "replay", "saved", "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no such file" not in result.stdout + result.stderr


# --- a tool's threads and subprocesses ----------------------------------------------------

THREADS = (
    "import threading, time\nfrom concurrent.futures import ThreadPoolExecutor\n\n"
    "def par(x):\n    \"\"\"Print from threads of its own, during its call and after it.\"\"\"\n"
    "    with ThreadPoolExecutor(2) as pool:\n        list(pool.map(lambda i: print('worker', i, '\\x1b[2J'), range(3)))\n"
    "    threading.Thread(target=lambda: time.sleep(0.3) or print('late', '\\x1b]0;PWNED\\x07')).start()\n"
    "    print('from the call')\n"
    "    return 'done'\n"
)


@pytest.mark.parametrize("batch", [False, True], ids=["one run", "a batch"])
def test_what_a_tools_own_threads_print_goes_nowhere(tmp_path, batch):
    for name in ("a", "b", "c") if batch else ("a",):
        (tmp_path / name).mkdir()
        scenario(tmp_path / name, "par", calls=2, source=THREADS).rename(tmp_path / name / f"{name}.toml")
    args = ["run", ".", "--jobs", "3", "--save-dir", "out"] if batch else ["run", "a/a.toml", "-f", "json", "--save", "out/a.txt"]
    (tmp_path / "out").mkdir()
    result = command(tmp_path, *args)
    assert result.returncode == 0 and "worker" not in result.stdout + result.stderr and "PWNED" not in result.stdout + result.stderr
    if not batch:
        json.loads(result.stdout)
    for saved in (tmp_path / "out").iterdir():
        assert observations(saved.read_text(encoding="utf-8"))[0] == "code      | Observation: from the call", saved


SUBPROCESS = (
    "import os, subprocess, sys\n\n"
    "def sh(x):\n    \"\"\"Run a command.\"\"\"\n"
    "    subprocess.run([sys.executable, '-c', 'print(\"from a subprocess\")'])\n"
    "    os.write(1, b'written to fd 1\\n')\n"
    "    return 'ok'\n"
)


@pytest.mark.parametrize("batch", [False, True], ids=["one run", "a batch"])
def test_a_subprocess_or_a_raw_write_to_fd_1_never_lands_in_harnesss_output(tmp_path, batch):
    # Only sys.stdout is Python's to swap; harness's own output goes through a copy of fd 1,
    # so what reaches fd 1 itself (a tool's `git status`, os.write(1, ...)) goes nowhere.
    for name in ("a", "b") if batch else ("a",):
        (tmp_path / name).mkdir()
        scenario(tmp_path / name, "sh", source=SUBPROCESS)
    args = ["run", ".", "--jobs", "2", "--report", "r.json"] if batch else ["run", "a/s.toml", "-f", "json"]
    result = command(tmp_path, *args)
    assert result.returncode == 0, result.stderr
    assert "from a subprocess" not in result.stdout + result.stderr and "fd 1" not in result.stdout
    if not batch:
        assert json.loads(result.stdout)["final_answer"] == "done"


def test_a_thread_a_tool_leaves_running_does_not_keep_the_command_from_ending(tmp_path):
    source = 'import threading, time\n\ndef nd(x):\n    """Start a thread that never ends."""\n    threading.Thread(target=lambda: time.sleep(3600)).start()\n    return "spawned"\n'
    path = scenario(tmp_path, "nd", source=source)
    started = time.monotonic()
    result = command(tmp_path, "run", str(path), "--save", "nd.txt", "-f", "tagged", timeout=30)
    assert result.returncode == 0 and result.stderr == "wrote nd.txt\n", result.stderr
    assert "code      | Observation: spawned\n" in result.stdout and (tmp_path / "nd.txt").is_file()
    assert time.monotonic() - started < 20  # it ended with its output, not with the thread


def test_in_a_program_harness_captures_a_calls_prints_and_puts_the_streams_back(capsys):
    # harness as a library: no channel; sys.stdout is a proxy only while a call runs, and a
    # thread of the program around it prints where it always did, meanwhile and afterwards.
    import threading

    from harness.tools import Registry, from_function

    printing, printed = threading.Event(), threading.Event()
    before = sys.stdout

    def host() -> None:
        printing.wait(5)
        print("from the host program")
        printed.set()

    def slow(x):
        """Wait while the host prints, then rebind sys.stdout."""
        printing.set()
        printed.wait(5)
        print("from the tool")
        sys.stdout = None
        return "ok"

    thread = threading.Thread(target=host)
    thread.start()
    assert Registry([from_function(slow)]).run("slow", ("q",), {}) == ("from the tool\nok", True)
    thread.join(5)
    assert sys.stdout is before and capsys.readouterr().out == "from the host program\n"


def test_a_batch_workers_note_is_written_while_another_threads_tool_prints(capsys):
    import threading

    from harness import captured

    printing, written = threading.Event(), threading.Event()

    def tool_run() -> None:  # a run's thread: its tool prints, and is still running
        call = captured.start()
        print("from the tool")
        printing.set()
        written.wait(5)
        assert captured.stop(call) == "from the tool\n"

    def note() -> None:  # another run's thread says a note meanwhile (harness.cli_batch.say_notes)
        captured.ours()
        printing.wait(5)
        print("note: from harness", file=sys.stderr)
        written.set()

    threads = [threading.Thread(target=tool_run), threading.Thread(target=note)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = capsys.readouterr()
    assert out.err == "note: from harness\n" and "from the tool" not in out.out


@pytest.mark.parametrize("unbuffered", [False, True])
def test_the_commands_own_stdout_is_buffered_as_pythons_was(tmp_path, unbuffered):
    # python -u / PYTHONUNBUFFERED stream `-f events` to a pipe line by line: the copy of fd 1
    # harness writes through keeps that.
    code = "import sys; from harness import captured; captured.contain(); print(sys.stdout.write_through, sys.stdout.buffer.__class__.__name__)"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"} if unbuffered else {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.stdout.split() == (["True", "_Channel"] if unbuffered else ["False", "BufferedWriter"]), done.stderr


# --- loading a tool module ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_what_a_tool_module_prints_while_it_is_imported_is_dropped(tmp_path, monkeypatch, fmt):
    path = scenario(tmp_path, "chatty", '"a"', source='print("importing!")\n' + TOOLS)
    monkeypatch.chdir(tmp_path)
    result = invoke("run", str(path), "--save", "out.txt", "-f", fmt)
    assert result.exit_code == 0 and "importing!" not in result.output
    assert_output_is_what_it_says(fmt, result.stdout, (tmp_path / "out.txt").read_text(encoding="utf-8"))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "top, says",
    [
        ('raise SystemExit("no")', "(SystemExit: no)"),
        ("raise SystemExit", "(SystemExit)"),
        ("raise GeneratorExit", "(GeneratorExit)"),
        ("class Unprintable(Exception):\n    def __str__(self):\n        raise RuntimeError\nraise Unprintable()", "(Unprintable: (its message could not be shown: RuntimeError))"),
    ],
    ids=["systemexit", "systemexit-bare", "generatorexit", "str-raises"],
)
def test_a_tool_module_that_fails_at_import_is_one_line_and_exit_2(tmp_path, monkeypatch, fmt, top, says):
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    path = scenario(tmp_path, "chatty", module="broken", source=f"{top}\n")
    monkeypatch.chdir(tmp_path)
    result = invoke("run", str(path), "--save", "out.txt", "-f", fmt)
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.count("\n") == 1
    assert "tools.chatty.python: the module 'broken' failed to import " + says in result.stderr
    assert not (tmp_path / "out.txt").exists()


def test_under_pytest_a_tool_that_fails_at_import_is_one_line(pytester, monkeypatch):
    path = scenario(pytester.path / "scenarios", "chatty", '"a"')
    monkeypatch.chdir(pytester.path)
    (pytester.path / "runs").mkdir()
    assert invoke("run", str(path.relative_to(pytester.path)), "--save", "runs/a.txt").exit_code == 0
    pytester.makeini("[pytest]\nharness_transcripts = runs\n")
    (pytester.path / "scenarios" / "tools.py").write_text('raise SystemExit("gone")\n', encoding="utf-8")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["scenarios/s.toml: tools.chatty.python: the module 'tools' failed to import (SystemExit: gone)"])
    assert "Traceback" not in result.stdout.str() and len(result.stdout.lines) < 30


def test_a_tool_from_an_importable_module(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "mypkg").mkdir(parents=True)
    (site / "mypkg" / "__init__.py").write_text("", encoding="utf-8")
    (site / "mypkg" / "tools.py").write_text('def search(q):\n    """Search."""\n    return "hits for " + q\n', encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    folder = tmp_path / "agent"
    folder.mkdir()
    path = folder / "s.toml"
    path.write_text('question = "q?"\ncompletions = ["Action: search(cats)\\n", "Final Answer: done\\n"]\n[tools.search]\npython = "mypkg.tools:search"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = invoke("run", str(path), "-f", "tagged", "--save", "out.txt")
    assert result.exit_code == 0, result.output
    assert "code      | Observation: hits for cats\n" in result.stdout
    assert invoke("replay", "out.txt", "--check").exit_code == 0


def test_a_dotted_module_is_named_in_full_when_missing_or_broken(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    missing = scenario(tmp_path, "chatty", module="pkg.tools")
    (tmp_path / "pkg" / "tools.py").unlink()
    result = invoke("run", str(missing))
    assert result.exit_code == 2 and "no module 'pkg.tools': no pkg/tools.py in" in result.stderr
    broken = scenario(tmp_path, "chatty", module="pkg.tools", source="import nowhere_at_all\n")
    result = invoke("run", str(broken))
    assert result.exit_code == 2
    assert "the module 'pkg.tools' failed to import (ModuleNotFoundError: No module named 'nowhere_at_all')" in result.stderr


def test_a_module_whose_getattr_raises_is_one_line(tmp_path, monkeypatch):
    path = scenario(tmp_path, "chatty", module="lazy", source='def __getattr__(name):\n    raise SystemExit("no " + name)\n')
    monkeypatch.chdir(tmp_path)
    result = invoke("run", str(path), "--save", "out.txt")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "the module 'lazy' failed to import (SystemExit: no chatty)" in result.stderr


def test_a_tool_edited_in_the_same_second_at_the_same_size_runs_as_edited(tmp_path):
    # Python trusts a cached .pyc whose source has the same size and modification second;
    # a tool file is compiled from its text on every build, never from that cache.
    tool = tmp_path / "said.py"
    path = scenario(tmp_path, "say", "1", "said", 'def say(x):\n    return "old"\n')
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # a .pyc is written, as for most users

    def observed() -> str:
        done = subprocess.run([sys.executable, "-m", "harness", "run", str(path), "-f", "tagged"], capture_output=True, text=True, env=env, check=True)
        return observations(done.stdout)[0]

    assert observed().endswith("Observation: old")
    before = tool.stat()
    tool.write_text('def say(x):\n    return "new"\n', encoding="utf-8")
    os.utime(tool, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert observed().endswith("Observation: new")


@pytest.mark.parametrize("future", ["", "from __future__ import annotations\n"], ids=["plain", "future annotations"])
def test_a_tool_module_runs_as_python_imports_it_dataclasses_annotations_and_tracebacks(tmp_path, monkeypatch, future):
    source = future + (
        "import dataclasses, traceback\n\n@dataclasses.dataclass\nclass Point:\n    x: int\n\n"
        "def where(a: int) -> str:\n    'Where.'\n"
        "    try:\n        1 / 0\n    except ZeroDivisionError:\n        frame = traceback.format_exc().splitlines()[1].strip()\n"
        "    return f'{Point(a)} {where.__annotations__} {frame}'\n"
    )
    path = scenario(tmp_path, "where", "7", "geo", source)
    monkeypatch.chdir(tmp_path.parent)  # tracebacks name the file as imported: the same from any folder
    result = runner.invoke(app, ["run", str(path), "-f", "tagged"])
    annotations = "{'a': 'int', 'return': 'str'}" if future else "{'a': <class 'int'>, 'return': <class 'str'>}"  # its own future, never harness's
    line = 10 + bool(future)
    assert observations(result.stdout) == [f'code      | Observation: Point(x=7) {annotations} File "{tmp_path / "geo.py"}", line {line}, in where'], result.output


def test_a_tool_module_imports_its_neighbours_absolutely_and_relatively(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path.parent)
    (tmp_path / "helpers.py").write_text('def where(x):\n    return "shipped " + x\n', encoding="utf-8")
    path = scenario(tmp_path, "track", '"42"', source='from helpers import where\n\ndef track(x):\n    """Where."""\n    return where(x)\n')
    result = invoke("run", str(path), "-f", "tagged")
    assert result.exit_code == 0 and observations(result.stdout) == ["code      | Observation: shipped 42"], result.output
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text('PREFIX = "from the package: "\n', encoding="utf-8")
    (tmp_path / "pkg" / "util.py").write_text('def shout(x):\n    return x.upper()\n', encoding="utf-8")
    source = 'from . import PREFIX\nfrom .util import shout\n\ndef loud(x):\n    """Loud."""\n    return PREFIX + shout(x)\n'
    path = scenario(tmp_path, "loud", '"hi"', module="pkg.tools", source=source)
    result = invoke("run", str(path), "-f", "tagged")
    assert result.exit_code == 0 and observations(result.stdout) == ["code      | Observation: from the package: HI"], result.output


NEIGHBOURS = {  # a neighbour of the tool's module, and how the tool imports it
    "module": ("helpers.py", "import helpers\n\ndef who(x):\n    \"\"\"Who.\"\"\"\n    return helpers.NAME\n"),
    "package without __init__": ("lib/x.py", "from lib import x\n\ndef who(q):\n    \"\"\"Who.\"\"\"\n    return x.NAME\n"),
    "relatively": ("util.py", "from .util import NAME\n\ndef who(x):\n    \"\"\"Who.\"\"\"\n    return NAME\n"),
}


@pytest.mark.parametrize("layout", NEIGHBOURS)
def test_two_folders_each_with_a_same_named_neighbour_get_their_own_in_one_batch(tmp_path, monkeypatch, layout):
    monkeypatch.chdir(tmp_path)
    neighbour, source = NEIGHBOURS[layout]
    for name in ("a", "b"):
        folder = tmp_path / "runs" / name
        (folder / neighbour).parent.mkdir(parents=True, exist_ok=True)
        (folder / neighbour).write_text(f'NAME = "{name}"\n', encoding="utf-8")
        scenario(folder, "who", source=source)
        (folder / "s.toml").rename(folder / f"{name}.toml")
    result = invoke("run", "runs", "--save-dir", "out")
    assert result.exit_code == 0, result.output
    for name in ("a", "b"):
        assert "code      | Observation: " + name + "\n" in (tmp_path / "out" / f"{name}.txt").read_text(encoding="utf-8")
    assert "helpers" not in sys.modules and "lib" not in sys.modules  # neither folder's is left where another import would find it


def test_a_tool_that_imports_from_its_own_folder_when_called_finds_it(tmp_path):
    # When the tool runs, its build has ended: its own modules must still be there.
    (tmp_path / "util.py").write_text('NAME = "from util"\n', encoding="utf-8")
    source = (
        "import importlib, pickle\n\nclass Box:\n    pass\n\n"
        "def late(x):\n    \"\"\"Late.\"\"\"\n    from .util import NAME\n"
        "    same = importlib.import_module(__name__) is importlib.import_module(Box.__module__)\n"
        "    return f\"{NAME} {same} {len(pickle.dumps(Box())) > 0}\"\n"
    )
    path = scenario(tmp_path, "late", source=source)
    result = invoke("run", str(path), "-f", "tagged")
    assert result.exit_code == 0 and observations(result.stdout) == ["code      | Observation: from util True True"], result.output


def test_a_package_of_the_user_s_imported_before_the_build_is_not_imported_twice(tmp_path, monkeypatch):
    # A test module imported the project's package; a tool is the first to import one of its
    # modules. The exception class the tool raises must be the one the test catches.
    (tmp_path / "mylib").mkdir()
    (tmp_path / "mylib" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "mylib" / "errors.py").write_text("class MyError(Exception):\n    pass\n", encoding="utf-8")
    (tmp_path / "tools.py").write_text("from mylib.errors import MyError\n\ndef b(x):\n    raise MyError(x)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    from harness import user_code

    import mylib  # noqa: F401  (as a test module of the project would)

    try:
        with user_code.loading(tmp_path):
            b = user_code.import_function("tools:b", tmp_path, "tools.b")
        from mylib.errors import MyError

        with pytest.raises(MyError):
            b("x")
    finally:
        sys.modules.pop("mylib", None), sys.modules.pop("mylib.errors", None)


def test_a_namespace_neighbour_that_also_has_a_portion_installed_is_still_each_folder_s_own(tmp_path, monkeypatch):
    # llama-cpp-python installs a top-level `lib/` (its shared libraries) into site-packages:
    # a tool folder's own `lib/x.py` is then one portion of a namespace package `lib`.
    installed = tmp_path / "site"
    (installed / "lib").mkdir(parents=True)
    (installed / "lib" / "other.py").write_text("", encoding="utf-8")
    monkeypatch.syspath_prepend(str(installed))
    test_two_folders_each_with_a_same_named_neighbour_get_their_own_in_one_batch(tmp_path, monkeypatch, "package without __init__")


@pytest.mark.parametrize("how", NEIGHBOURS)
def test_a_neighbour_edited_in_one_long_process_is_seen_by_the_next_run(tmp_path, monkeypatch, how):
    # A pytest session replays, the user edits helpers.py, the next replay in that session
    # runs the new helpers.
    monkeypatch.chdir(tmp_path)
    neighbour, source = NEIGHBOURS[how]
    (tmp_path / neighbour).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / neighbour).write_text('NAME = "before"\n', encoding="utf-8")
    path = scenario(tmp_path, "who", source=source)
    assert observations(invoke("run", str(path), "-f", "tagged").stdout) == ["code      | Observation: before"]
    (tmp_path / neighbour).write_text('NAME = "after"\n', encoding="utf-8")
    assert observations(invoke("run", str(path), "-f", "tagged").stdout) == ["code      | Observation: after"]


def test_an_edited_tool_module_changes_the_recorded_hash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = scenario(tmp_path, "who", source='def who(x):\n    """Who."""\n    return "me"\n')
    runs = [invoke("run", str(path), "-f", "tagged").stdout]
    (tmp_path / "tools.py").write_text('def who(x):\n    """Who."""\n    return "me"  # edited\n', encoding="utf-8")
    runs += [invoke("run", str(path), "-f", "tagged").stdout, invoke("run", str(path), "-f", "tagged").stdout]
    hashes = [next(line for line in run.splitlines() if line.startswith("# source:")) for run in runs]
    assert hashes[0] != hashes[1] == hashes[2]


SHARED = {  # two tool modules, a and b, that import one relative neighbour, db
    "from .db import ITEMS": "ITEMS",
    "from . import db": "db.ITEMS",
}


@pytest.mark.parametrize("how", SHARED)
def test_two_tool_modules_of_one_folder_share_their_neighbour_within_a_run_and_load_it_afresh_for_the_next(tmp_path, monkeypatch, how):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "db.py").write_text("ITEMS = []\n", encoding="utf-8")
    (tmp_path / "add.py").write_text(f'{how}\n\ndef add(x):\n    """Add."""\n    {SHARED[how]}.append(x)\n    return "added"\n', encoding="utf-8")
    source = f'{how}\n\ndef count(x):\n    """Count."""\n    return f"{{len({SHARED[how]})}} items"\n'
    path = scenario(tmp_path, "count", source=source)
    text = path.read_text(encoding="utf-8").replace('"Action: count(\\"q\\")\\n"', '"Action: add(1)\\n", "Action: count(1)\\n"')
    path.write_text(text + '[tools.add]\npython = "add:add"\n', encoding="utf-8")
    for _ in range(2):  # each run starts from a fresh db
        result = invoke("run", str(path), "-f", "tagged")
        assert observations(result.stdout) == ["code      | Observation: added", "code      | Observation: 1 items"], result.output


def test_two_tools_of_one_module_share_its_globals(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = 'SEEN = []\n\ndef note(x):\n    """Note."""\n    SEEN.append(x)\n    return "noted"\n\ndef seen(x):\n    """Seen."""\n    return str(len(SEEN))\n'
    path = scenario(tmp_path, "seen", source=source)
    text = path.read_text(encoding="utf-8").replace('"Action: seen(\\"q\\")\\n"', '"Action: note(1)\\n", "Action: seen(1)\\n"')
    path.write_text(text + '[tools.note]\npython = "tools:note"\n', encoding="utf-8")
    result = invoke("run", str(path), "-f", "tagged")
    assert observations(result.stdout) == ["code      | Observation: noted", "code      | Observation: 1"], result.output


def test_what_a_tool_imports_from_elsewhere_stays_imported_even_from_inside_its_folder(tmp_path, monkeypatch):
    # A folder that holds a virtual environment (or the project's own package): a tool's
    # first import of an installed module found there must stay the one module everybody uses.
    site = tmp_path / ".venv" / "site"
    site.mkdir(parents=True)
    (site / "installed_once.py").write_text("import itertools\nCOUNT = next(itertools.count())\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)
    path = scenario(tmp_path, "ask", source='import installed_once\n\ndef ask(x):\n    """Ask."""\n    return "ok"\n')
    assert invoke("run", str(path), "-f", "tagged").exit_code == 0
    assert "installed_once" in sys.modules


def test_a_helpers_module_that_links_elsewhere_is_its_folders_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "shared.py").write_text('NAME = "shared"\n', encoding="utf-8")
    for name in ("a", "b"):
        folder = tmp_path / "runs" / name
        folder.mkdir(parents=True)
        helpers = folder / "helpers.py"
        helpers.symlink_to(tmp_path / "shared.py") if name == "a" else helpers.write_text('NAME = "own"\n', encoding="utf-8")
        scenario(folder, "who", source='import helpers\n\ndef who(q):\n    """Who."""\n    return helpers.NAME\n')
        (folder / "s.toml").rename(folder / f"{name}.toml")
    assert invoke("run", "runs", "--save-dir", "out").exit_code == 0
    assert "Observation: shared\n" in (tmp_path / "out" / "a.txt").read_text(encoding="utf-8")
    assert "Observation: own\n" in (tmp_path / "out" / "b.txt").read_text(encoding="utf-8")


def test_a_tool_module_that_takes_its_folder_off_sys_path_is_no_crash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = 'import os, sys\nsys.path.remove(os.path.dirname(os.path.abspath(__file__)))\n\ndef ask(q):\n    """Ask."""\n    return "ok"\n'
    result = invoke("run", str(scenario(tmp_path, "ask", source=source)), "-f", "tagged")
    assert result.exit_code == 0 and observations(result.stdout) == ["code      | Observation: ok"], result.output


def test_a_missing_neighbour_is_named_as_the_user_wrote_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("run", str(scenario(tmp_path, "ask", source="from .nothere import x\n")))
    assert result.exit_code == 2 and "No module named 'nothere'" in result.stderr and "harness_tools_" not in result.stderr


@pytest.mark.parametrize("what", ["prompt_file", "tool module"])
def test_a_looping_link_in_a_scenarios_folder_is_one_line(tmp_path, monkeypatch, what):
    monkeypatch.chdir(tmp_path)
    path = scenario(tmp_path, "chatty")
    if what == "prompt_file":
        (tmp_path / "p.txt").symlink_to(tmp_path / "loop")
        (tmp_path / "loop").symlink_to(tmp_path / "p.txt")
        path.write_text('prompt_file = "p.txt"\n' + path.read_text(encoding="utf-8"), encoding="utf-8")
    else:
        (tmp_path / "tools.py").unlink()
        (tmp_path / "tools.py").symlink_to(tmp_path / "tools.py")
    for args in (["run", str(path)], ["run", str(path), "nimbus", "--save-dir", "out"]):
        result = invoke(*args)
        assert result.exit_code == 2 and result.exception is None or isinstance(result.exception, SystemExit), result.output
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and ("Too many levels of symbolic links" in errors[0] or "a link that loops" in errors[0]), result.stderr
    assert (tmp_path / "out" / "nimbus.txt").is_file()  # the batch's other run ran and was saved


def test_a_tool_module_sees_builtins_as_a_test_patches_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # A test builds the tools, then patches a builtin the tool calls: the tool sees the patch.
    from harness.scenario import load_scenario

    (ask,) = load_scenario(scenario(tmp_path, "ask", source='def ask(q):\n    """Ask."""\n    return input("? ")\n')).build_tools()
    monkeypatch.setattr("builtins.input", lambda prompt: "patched")
    assert ask.call(("q",), {}) == "patched"


def test_builds_leave_a_package_in_sys_modules_only_when_a_tool_module_came_into_it(tmp_path, monkeypatch):
    """A program that runs many agents does not grow sys.modules a build at a time for
    nothing; a Python tool's module stays, for a tool that imports from it when called."""
    import sys

    from harness.scenario import find_scenario, load_scenario

    monkeypatch.chdir(tmp_path)
    packages = lambda: {m for m in sys.modules if m.startswith("harness_tools_")}  # noqa: E731
    before = packages()
    for _ in range(3):
        load_scenario(find_scenario("nimbus")).build_tools()
    assert packages() == before
    load_scenario(scenario(tmp_path, "ask", source='def ask(q):\n    """Ask."""\n    return q\n')).build_tools()
    assert len(packages() - before) == 2  # the build's package and the tool's module in it


def test_a_tool_error_naming_its_module_reads_the_same_in_every_build_so_a_replay_matches(tmp_path, monkeypatch):
    # Each build loads the folder as a package of harness's own (harness_tools_N, new each
    # build); an error that names a module must say the user's name, or no replay matches.
    monkeypatch.chdir(tmp_path)
    source = 'import sys\n\ndef probe(q):\n    """Probe."""\n    return sys.modules[__name__].MISSING\n'
    path = scenario(tmp_path, "probe", source=source)
    first = invoke("run", str(path), "--save", str(tmp_path / "saved.txt"))
    assert first.exit_code == 0, first.output
    said = observations((tmp_path / "saved.txt").read_text(encoding="utf-8"))
    assert said == ["code      | Observation: Error: AttributeError: module 'tools' has no attribute 'MISSING'"]
    again = invoke("replay", str(tmp_path / "saved.txt"), "--check")
    assert again.exit_code == 0, again.output
