"""A Python tool is user code; it must not take harness down with it. Each misbehaviour is
run through the command, with --save and in every --format: the run goes on, the file is
saved, and harness's own output stays what it says it is (JSON parses, events are JSON
Lines, the tagged output is the saved transcript)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import sys
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


def scenario(folder: Path, tool: str, arg: str = "\"q\"", module: str = "tools", source: str = TOOLS) -> Path:
    (folder / "elsewhere").mkdir(parents=True, exist_ok=True)
    (folder / f"{module.replace('.', '/')}.py").parent.mkdir(parents=True, exist_ok=True)
    (folder / f"{module.replace('.', '/')}.py").write_text(source, encoding="utf-8")
    lines = [
        'question = "q?"',
        f"completions = [{json.dumps(f'Action: {tool}({arg})' + chr(10))}, \"Final Answer: done\\n\"]",
        f"[tools.{tool}]",
        f'python = "{module}:{tool}"',
    ]
    path = folder / "s.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def assert_output_is_what_it_says(fmt: str, stdout: str, saved: str) -> None:
    if fmt == "json":
        json.loads(stdout)
    elif fmt == "events":
        assert all(json.loads(line) for line in stdout.splitlines())
    elif fmt == "tagged":
        assert stdout == saved


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


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_tool_that_changes_the_working_folder_cannot_move_the_saved_file(tmp_path, monkeypatch, fmt):
    path = scenario(tmp_path, "wander")
    monkeypatch.chdir(tmp_path)
    result = invoke("run", str(path), "--save", "out.txt", "-f", fmt)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.txt").is_file() and not (tmp_path / "elsewhere" / "out.txt").exists()
    assert result.stderr == "wrote out.txt\n"


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


def test_a_real_ctrl_c_in_a_tool_still_cancels_the_run(tmp_path, monkeypatch):
    source = TOOLS + '\n\ndef stop(x):\n    """Ctrl-C."""\n    raise KeyboardInterrupt\n'
    path = scenario(tmp_path, "stop", source=source)
    monkeypatch.chdir(tmp_path)
    result = invoke("run", str(path), "--save", "out.txt", "-f", "tagged")
    assert result.exit_code == 130
    assert '# stop_reason: "canceled"' in (tmp_path / "out.txt").read_text(encoding="utf-8")
    assert os.getcwd() == str(tmp_path)


def test_a_module_whose_getattr_raises_is_one_line(tmp_path, monkeypatch):
    path = scenario(tmp_path, "chatty", module="lazy", source='def __getattr__(name):\n    raise SystemExit("no " + name)\n')
    monkeypatch.chdir(tmp_path)
    result = invoke("run", str(path), "--save", "out.txt")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "the module 'lazy' failed to import (SystemExit: no chatty)" in result.stderr


def test_a_tool_edited_in_the_same_second_at_the_same_size_runs_as_edited(tmp_path):
    # Python trusts a cached .pyc whose source has the same size and modification second;
    # a tool file is run from the text harness read (and hashed), never from that cache.
    tool = tmp_path / "said.py"
    path = scenario(tmp_path, "say", "1", "said", 'def say(x):\n    return "old"\n')
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # a .pyc is written, as for most users

    def observed() -> str:
        done = subprocess.run([sys.executable, "-m", "harness", "run", str(path), "-f", "tagged"], capture_output=True, text=True, env=env, check=True)
        return next(line for line in done.stdout.splitlines() if line.startswith("code      | Observation:"))

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
    observation = next(line for line in result.stdout.splitlines() if line.startswith("code      | Observation:"))
    annotations = "{'a': 'int', 'return': 'str'}" if future else "{'a': <class 'int'>, 'return': <class 'str'>}"  # its own future, never harness's
    line = 10 + bool(future)
    assert observation == f'code      | Observation: Point(x=7) {annotations} File "{tmp_path / "geo.py"}", line {line}, in where', result.output


def observation(result) -> str:
    return next(line for line in result.stdout.splitlines() if line.startswith("code      | Observation:"))


def test_a_tool_module_imports_its_neighbours_absolutely_and_relatively(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path.parent)
    (tmp_path / "helpers.py").write_text('def where(x):\n    return "shipped " + x\n', encoding="utf-8")
    path = scenario(tmp_path, "track", '"42"', source='from helpers import where\n\ndef track(x):\n    """Where."""\n    return where(x)\n')
    result = invoke("run", str(path), "-f", "tagged")
    assert result.exit_code == 0 and observation(result) == "code      | Observation: shipped 42", result.output
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text('PREFIX = "from the package: "\n', encoding="utf-8")
    (tmp_path / "pkg" / "util.py").write_text('def shout(x):\n    return x.upper()\n', encoding="utf-8")
    source = 'from . import PREFIX\nfrom .util import shout\n\ndef loud(x):\n    """Loud."""\n    return PREFIX + shout(x)\n'
    path = scenario(tmp_path, "loud", '"hi"', module="pkg.tools", source=source)
    result = invoke("run", str(path), "-f", "tagged")
    assert result.exit_code == 0 and observation(result) == "code      | Observation: from the package: HI", result.output


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


THREADED = (
    "from concurrent.futures import ThreadPoolExecutor\n\n"
    "def par(x):\n    \"\"\"Parallel.\"\"\"\n"
    "    with ThreadPoolExecutor(2) as pool:\n        list(pool.map(lambda i: print('worker', i, '\\x1b[2J'), range(3)))\n"
    "    return 'done'\n"
)


def command(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """`harness ARGS` as a process of its own, in `folder`: what reaches its stdout and stderr."""
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=folder, timeout=120)


def called_twice(folder: Path, tool: str, source: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """A scenario calling `tool(1)` then `tool(2)`, run by the command as JSON: the process and
    the observations (its stdout holds the JSON alone)."""
    path = scenario(folder, tool, source=source)
    text = path.read_text(encoding="utf-8").replace(f'"Action: {tool}(\\"q\\")\\n"', f'"Action: {tool}(1)\\n", "Action: {tool}(2)\\n"')
    path.write_text(text, encoding="utf-8")
    result = command(folder, "run", str(path), "-f", "json")
    spans = json.loads(result.stdout)["spans"] if result.returncode == 0 else []
    return result, [s["text"] for s in spans if s["author"] == "code" and s["text"].startswith("Observation")]

def test_what_a_tools_own_threads_print_is_its_output_never_harnesss(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = scenario(tmp_path, "par", source=THREADED)
    result = command(tmp_path, "run", str(path), "-f", "json")
    assert result.returncode == 0 and result.stderr == ""
    record = json.loads(result.stdout)  # nothing but the JSON on stdout
    observation = next(s["text"] for s in record["spans"] if s["author"] == "code" and "done" in s["text"])
    assert sorted(observation.removeprefix("Observation: ").splitlines()) == ["done", *(f"worker {i} \x1b[2J" for i in range(3))]


def test_in_a_batch_a_tools_own_threads_print_nowhere_raw(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
        scenario(tmp_path / name, "par", source=THREADED)
    result = command(tmp_path, "run", ".", "--jobs", "3", "--report", "r.json")
    assert result.returncode == 0, result.stderr
    assert "worker" not in result.stdout and "worker" not in result.stderr and "\x1b[2J" not in result.stdout + result.stderr


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
    assert result.exit_code == 0 and "code      | Observation: ok\n" in result.stdout, result.output


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


def test_a_batch_thread_writes_through_while_another_runs_tool_prints(capsys):
    import threading

    from harness import captured

    printing, written = threading.Event(), threading.Event()

    def tool_run() -> None:  # a run's thread: its tool prints, and is still running
        outer = captured.start()
        print("from the tool")
        printing.set()
        written.wait(5)
        assert captured.stop(outer) == "from the tool\n"

    def note() -> None:  # another run's thread says a note meanwhile (harness.cli_batch.say_notes)
        printing.wait(5)
        print("note: from harness", file=sys.stderr)
        written.set()

    threads = [threading.Thread(target=tool_run), threading.Thread(target=lambda: captured.ours() or note())]  # note: a batch worker
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = capsys.readouterr()
    assert out.err == "note: from harness\n" and "from the tool" not in out.out


LATE = (
    "import threading, time\n\n"
    "go = threading.Event()\n\n"
    "def late(x):\n    \"\"\"Start a thread that prints later.\"\"\"\n"
    "    if x == 1:\n"
    "        threading.Thread(target=lambda: go.wait(5) and print('late from call 1', '\\x1b[2J')).start()\n"
    "        threading.Thread(target=lambda: time.sleep(0.5) or print('after the run')).start()\n"
    "        return 'first'\n"
    "    go.set()\n    time.sleep(0.2)  # the first call's thread prints while this one runs\n"
    "    return 'second'\n"
)


def test_a_tools_thread_named_like_harnesss_own_is_still_the_tools(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = THREADED.replace("ThreadPoolExecutor(2)", "ThreadPoolExecutor(2, thread_name_prefix='harness-run')")
    result = command(tmp_path, "run", str(scenario(tmp_path, "par", source=source)), "-f", "json")
    assert result.returncode == 0 and result.stderr == ""
    observation = next(s["text"] for s in json.loads(result.stdout)["spans"] if s["author"] == "code" and "done" in s["text"])
    assert "worker 0" in observation


def test_the_host_programs_own_thread_prints_where_it_always_did_while_a_tool_runs(capsys):
    # harness as a library: a thread of the program around it is not the tool's to capture.
    import threading

    from harness.tools import Registry, from_function

    printing, printed = threading.Event(), threading.Event()

    def host() -> None:
        printing.wait(5)
        print("from the host program")
        printed.set()

    def slow(x):
        """Wait while the host prints."""
        printing.set()
        printed.wait(5)
        print("from the tool")
        return "ok"

    thread = threading.Thread(target=host)
    thread.start()
    assert Registry([from_function(slow)]).run("slow", ("q",), {}) == ("from the tool\nok", True)
    thread.join(5)
    assert capsys.readouterr().out == "from the host program\n"


@pytest.mark.parametrize("how", NEIGHBOURS)
def test_a_neighbour_edited_in_one_long_process_is_imported_afresh_and_changes_the_recorded_hash(tmp_path, monkeypatch, how):
    # A pytest session replays, the user edits helpers.py, the next replay in that session
    # runs the new helpers; and the saved file's source hash says the source changed.
    monkeypatch.chdir(tmp_path)
    neighbour, source = NEIGHBOURS[how]
    (tmp_path / neighbour).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / neighbour).write_text('NAME = "before"\n', encoding="utf-8")
    path = scenario(tmp_path, "who", source=source)
    first = invoke("run", str(path), "-f", "tagged")
    assert observation(first) == "code      | Observation: before", first.output
    (tmp_path / neighbour).write_text('NAME = "after"\n', encoding="utf-8")
    second = invoke("run", str(path), "-f", "tagged")
    assert observation(second) == "code      | Observation: after", second.output
    hashes = [next(line for line in r.stdout.splitlines() if line.startswith("# source:")) for r in (first, second)]
    assert hashes[0] != hashes[1]
    again = invoke("run", str(path), "-f", "tagged")  # nothing edited since: the same module, the same hash
    assert observation(again) == "code      | Observation: after" and hashes[1] in again.stdout


SUBPROCESS = (
    "import os, subprocess, sys\n\n"
    "def sh(x):\n    \"\"\"Run a command.\"\"\"\n"
    "    subprocess.run([sys.executable, '-c', 'print(\"from a subprocess\")'])\n"
    "    os.write(1, b'written to fd 1\\n')\n"
    "    return 'ok'\n"
)


@pytest.mark.parametrize("batch", [False, True], ids=["one run", "a batch"])
def test_a_subprocess_or_a_raw_write_to_fd_1_never_lands_in_harnesss_output(tmp_path, monkeypatch, batch):
    # Only sys.stdout is Python's to swap; harness's own output goes through a copy of fd 1,
    # so what reaches fd 1 itself (a tool's `git status`, os.write(1, ...)) goes nowhere.
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b") if batch else ("a",):
        (tmp_path / name).mkdir()
        scenario(tmp_path / name, "sh", source=SUBPROCESS)
    args = ["run", ".", "--jobs", "2", "--report", "r.json"] if batch else ["run", "a/s.toml", "-f", "json"]
    result = command(tmp_path, *args)
    assert result.returncode == 0, result.stderr
    assert "from a subprocess" not in result.stdout + result.stderr and "fd 1" not in result.stdout
    if not batch:
        assert json.loads(result.stdout)["final_answer"] == "done"


def test_a_thread_a_tool_leaves_running_does_not_keep_the_command_from_ending(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = 'import threading, time\n\ndef nd(x):\n    """Start a thread that never ends."""\n    threading.Thread(target=lambda: time.sleep(3600)).start()\n    return "spawned"\n'
    path = scenario(tmp_path, "nd", source=source)
    result = command(tmp_path, "run", str(path), "--save", "nd.txt", "-f", "tagged")
    assert result.returncode == 0, result.stderr
    assert "code      | Observation: spawned\n" in result.stdout and (tmp_path / "nd.txt").is_file()
    assert "note: 1 thread(s) a tool started still ran 2 s after the run; harness ended without them\n" in result.stderr


def test_a_tool_that_changes_the_working_folder_loses_no_later_replay_of_a_batch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = scenario(tmp_path, "cd", source='import os\n\ndef cd(x):\n    """Go elsewhere."""\n    os.chdir("/")\n    return "moved"\n')
    (tmp_path / "saved").mkdir()
    for name, target in (("a1", str(path)), ("a2", "nimbus"), ("a3", "nimbus")):
        done = command(tmp_path, "run", target, "--save", f"saved/{name}.txt")
        assert done.returncode == 0, done.stderr
    result = command(tmp_path, "replay", "saved", "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no such file" not in result.stdout + result.stderr


POOL = (
    "from concurrent.futures import ThreadPoolExecutor\n\n"
    "POOL = ThreadPoolExecutor(1)  # made once, as the module is imported: its worker serves every call\n\n"
    "def work(x):\n    \"\"\"Work in the pool.\"\"\"\n"
    "    POOL.submit(print, 'worker says', x).result()\n"
    "    return 'done'\n"
)


GRANDCHILD = (
    "import threading, time\n\n"
    "go = threading.Event()\n\n"
    "def late(x):\n    \"\"\"A thread that, once the call is over, starts one that prints.\"\"\"\n"
    "    if x == 1:\n"
    "        def later():\n"
    "            go.wait(5)\n"
    "            threading.Thread(target=lambda: print('from a thread of a thread', '\\x1b]0;PWNED\\x07')).start()\n"
    "        threading.Thread(target=later, daemon=True).start()\n"
    "        return 'first'\n"
    "    go.set()\n    time.sleep(0.3)\n    return 'second'\n"
)


def test_two_tool_modules_of_one_folder_share_their_relative_neighbour(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "db.py").write_text("ITEMS = []\n", encoding="utf-8")
    (tmp_path / "add.py").write_text('from .db import ITEMS\n\ndef add(x):\n    """Add."""\n    ITEMS.append(x)\n    return "added"\n', encoding="utf-8")
    source = 'from .db import ITEMS\n\ndef count(x):\n    """Count."""\n    return f"{len(ITEMS)} items"\n'
    path = scenario(tmp_path, "count", source=source)
    text = path.read_text(encoding="utf-8").replace('"Action: count(\\"q\\")\\n"', '"Action: add(1)\\n", "Action: count(1)\\n"')
    path.write_text(text + '[tools.add]\npython = "add:add"\n', encoding="utf-8")
    result = invoke("run", str(path), "-f", "tagged")
    assert result.exit_code == 0 and "code      | Observation: 1 items\n" in result.stdout, result.output


def test_in_a_program_that_calls_harness_a_thread_it_starts_during_a_tool_call_prints_on_afterwards(capsys):
    import threading

    from harness.tools import Registry, from_function

    started, go = threading.Event(), threading.Event()
    host: list[threading.Thread] = []

    def slow(x):
        """Wait while the program around starts a thread of its own."""
        started.set()
        go.wait(5)
        return "ok"

    def program() -> None:  # the host program, in another thread, starts a logger mid-call
        started.wait(5)
        host.append(threading.Thread(target=lambda: (time.sleep(0.2), print("host log line"))))
        host[0].start()
        go.set()

    other = threading.Thread(target=program)
    other.start()
    assert Registry([from_function(slow)]).run("slow", ("q",), {}) == ("ok", True)
    other.join(5)
    host[0].join(5)
    assert capsys.readouterr().out == "host log line\n" and type(sys.stdout).__name__ != "_PerThread"


@pytest.mark.parametrize("unbuffered", [False, True])
def test_the_commands_own_stdout_is_buffered_as_pythons_was(tmp_path, unbuffered):
    # python -u / PYTHONUNBUFFERED stream `-f events` to a pipe line by line: the copy of fd 1
    # harness writes through keeps that (its bytes unbuffered, its text written through).
    code = "import sys; from harness.__main__ import own_stdout; own_stdout(); print(type(sys.stdout.buffer).__name__, sys.stdout.write_through)"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"} if unbuffered else {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.stdout == ("FileIO True\n" if unbuffered else "BufferedWriter False\n"), done.stderr


@pytest.mark.parametrize(
    "tool, source, observations",
    [
        ("late", LATE, ["Observation: first\n", "Observation: second\n"]),  # printed after its call, and after the run
        ("late", GRANDCHILD, ["Observation: first\n", "Observation: second\n"]),  # started by a tool's thread, after its call
        ("work", POOL, ["Observation: worker says 1\ndone\n", "Observation: worker says 2\ndone\n"]),  # a pool's worker serves each call
    ],
    ids=["a late thread", "a thread of a thread", "a module's pool"],
)
def test_whose_a_thread_is_is_decided_as_it_starts_and_its_late_prints_go_nowhere(tmp_path, monkeypatch, tool, source, observations):
    # In the command, a thread is the call's that was capturing in the thread that started it:
    # what it prints once that call has returned is dropped, never raw and never the next call's.
    monkeypatch.chdir(tmp_path)
    result, seen = called_twice(tmp_path, tool, source)
    assert result.returncode == 0 and result.stderr == "", result.stderr  # (an idle pool's worker ends with the process, unsaid)
    assert seen == observations and "PWNED" not in result.stdout and "\x1b[2J" not in result.stdout


@pytest.mark.parametrize("how", ["from .db import ITEMS, V", "from . import db"])
def test_a_shared_relative_neighbour_edited_is_seen_by_both_tool_modules_and_still_shared(tmp_path, how):
    from harness.user_code import import_function

    uses = "db.ITEMS, db.V" if how == "from . import db" else "ITEMS, V"
    for name in ("a", "b"):
        body = f"{how}\n\ndef {name}(x):\n    \"\"\"Use the shared list.\"\"\"\n    items, v = {uses}\n"
        body += "    items.append(x)\n" if name == "a" else ""
        (tmp_path / f"{name}.py").write_text(body + "    return f'V={v} n={len(items)}'\n", encoding="utf-8")

    def both() -> tuple[str, str]:
        return import_function("a:a", tmp_path, "a")("x"), import_function("b:b", tmp_path, "b")("x")

    (tmp_path / "db.py").write_text("ITEMS = []\nV = 1\n", encoding="utf-8")
    assert both() == ("V=1 n=1", "V=1 n=1")
    (tmp_path / "db.py").write_text("ITEMS = []\nV = 2\n", encoding="utf-8")  # the user edits it mid-session
    assert both() == ("V=2 n=1", "V=2 n=1")  # both see the edit, and still share one list
    assert both() == ("V=2 n=2", "V=2 n=2")


LATE_JOB = (
    "import time\nfrom concurrent.futures import ThreadPoolExecutor\n\n"
    "POOL = ThreadPoolExecutor(1)\n\n"
    "def late(x):\n    \"\"\"The first call leaves a job that prints while the second runs.\"\"\"\n"
    "    if x == 1:\n        POOL.submit(lambda: time.sleep(0.2) or print('a job of the first call'))\n        return 'queued'\n"
    "    time.sleep(0.5)\n    return 'waited'\n"
)


def test_a_pool_job_is_the_call_s_that_submitted_it_not_the_one_running_when_it_prints(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result, seen = called_twice(tmp_path, "late", LATE_JOB)
    assert result.returncode == 0 and seen == ["Observation: queued\n", "Observation: waited\n"], result.stdout + result.stderr


def test_in_a_program_that_calls_harness_its_own_pool_prints_where_it_always_did(capsys):
    from concurrent.futures import ThreadPoolExecutor

    from harness.tools import Registry, from_function

    def slow(x):
        """Wait while the program's pool prints."""
        time.sleep(0.3)
        return "ok"

    with ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: None).result()  # its worker runs before the call begins
        job = pool.submit(lambda: time.sleep(0.1) or print("queued by the program"))
        assert Registry([from_function(slow)]).run("slow", ("q",), {}) == ("ok", True)
        job.result()
    assert capsys.readouterr().out == "queued by the program\n"


def test_ctrl_c_while_a_left_thread_keeps_the_command_waiting_is_one_line_and_130(tmp_path, monkeypatch):
    import signal

    monkeypatch.chdir(tmp_path)
    source = 'import threading, time\n\ndef nd(x):\n    """Start a thread that never ends."""\n    threading.Thread(target=lambda: time.sleep(3600)).start()\n    return "spawned"\n'
    path = scenario(tmp_path, "nd", source=source)
    process = subprocess.Popen([sys.executable, "-m", "harness", "run", str(path), "-f", "tagged"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    for line in process.stdout:  # the output is all out when its last line is: then it waits for the thread
        if "Final Answer: done" in line:
            break
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    # (rarely the Ctrl-C lands as the command ends its run, before it waits: it waits its 2 s then)
    assert process.returncode == 130 and err in ("interrupted\n", "note: 1 thread(s) a tool started still ran 2 s after the run; harness ended without them\n"), err


def test_an_edit_two_modules_down_and_a_tool_first_imported_after_it_are_both_seen(tmp_path):
    # a -> db -> util: an edit to util reaches a through db; b, first imported after the edit,
    # shares the one fresh db with a.
    from harness.user_code import import_function

    (tmp_path / "util.py").write_text("V = 1\n", encoding="utf-8")
    (tmp_path / "db.py").write_text("from .util import V\nITEMS = []\n", encoding="utf-8")
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text(f"from . import db\n\ndef {name}(x):\n    \"\"\"Use db.\"\"\"\n    return f'V={{db.V}} {{id(db.ITEMS)}}'\n", encoding="utf-8")
    assert import_function("a:a", tmp_path, "a")("x").startswith("V=1 ")
    (tmp_path / "util.py").write_text("V = 2\n", encoding="utf-8")
    a, b = import_function("b:b", tmp_path, "b")("x"), import_function("a:a", tmp_path, "a")("x")
    assert a == b and a.startswith("V=2 ")
