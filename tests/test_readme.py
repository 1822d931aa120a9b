"""The README runs as written.

Every ```python block is run, and every ```sh block is run line by line in a fresh copy of
the checkout, as a reader would paste it into a shell there. In a ```sh block:

    a line               a command, run as written (`  # ...` after it is the shell's comment)
    #> text              the command above prints `text` (stdout or stderr)
    `# exits N` after a command: its exit code is N (else 0)
    `# in a terminal` after a command: it takes over a terminal; run in a pty, `q` pressed

The fence's word after `sh` says how the block is run: none, with `.venv/bin/` holding this
interpreter (python, harness, and `activate`); `fresh`, creating a real venv as written
(slow: pip installs from its cache); `live`, needing llama.cpp and a model server, run only
where HARNESS_TEST_SERVER or CI is set (`bash .ci/run`), its `pip install` lines run with
`--dry-run` since .ci/run has already built what they install; `suite`, the test command
itself, checked against what .ci/run runs.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import harness

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w+)[ \t]*([^\n]*)\n(.*?)^```", README, flags=re.DOTALL | re.MULTILINE)
PYTHON = [body for lang, _, body in BLOCKS if lang == "python"]
SHELL = [(kind.strip(), body) for lang, kind, body in BLOCKS if lang == "sh"]
LIVE = bool(os.environ.get("HARNESS_TEST_SERVER") or os.environ.get("CI"))


@dataclass
class Command:
    line: str
    says: list[str] = field(default_factory=list)  # what its output holds
    exits: int = 0
    terminal: bool = False


def commands(block: str) -> list[Command]:
    out: list[Command] = []
    for line in (raw.strip() for raw in block.splitlines()):
        if line.startswith("#>"):
            out[-1].says.append(line[2:].strip())
        elif line and not line.startswith("#"):
            comment = line.partition("  # ")[2].strip()
            exits = re.match(r"exits (\d+)", comment)
            out.append(Command(line, exits=int(exits[1]) if exits else 0, terminal=comment.startswith("in a terminal")))
    return out


# -- the Python examples ---------------------------------------------------------------


@pytest.mark.parametrize("code", PYTHON, ids=[f"python-{i}" for i in range(len(PYTHON))])
def test_each_python_example_runs(code, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out  # each example shows something


def test_every_exported_name_is_importable_and_documented():
    for name in harness.__all__:
        assert getattr(harness, name) is not None
        assert f"`{name}" in README, name


# -- the shell blocks -------------------------------------------------------------------

# A terminal for one command: 80x24, `q` once it has drawn; what it drew is its output.
TTY = """
import fcntl, os, pty, select, struct, sys, termios, time
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm-256color"
    os.execvp("bash", ["bash", "-c", sys.argv[1]])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
seen, pressed, end = b"", False, time.monotonic() + 60
while time.monotonic() < end:
    if select.select([fd], [], [], 0.5)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    elif seen and not pressed:
        os.write(fd, b"q")
        pressed = True
sys.stdout.write(seen.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def checkout(tmp: Path, kind: str) -> Path:
    """A copy of the checkout at tmp/harness, an empty tmp/my-project beside it, and unless
    the block makes its own, a .venv whose commands are this interpreter's."""
    copy = tmp / "harness"
    for name in ("harness", "prompts", "transcripts", "tests", "pyproject.toml", "README.md", ".gitignore"):
        source = ROOT / name
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".hypothesis", "screenshots")
            shutil.copytree(source, copy / name, ignore=ignore)
        else:
            shutil.copy(source, copy / name)
    (tmp / "my-project").mkdir()
    if kind != "fresh":
        bin_ = copy / ".venv" / "bin"
        bin_.mkdir(parents=True)
        shims = {"python": "", "harness": " -m harness", "pip": " -m pip"}
        for name, run in shims.items():
            dry = ' "$@" --dry-run' if name == "pip" else ' "$@"'  # see the module's docstring
            (bin_ / name).write_text(f'#!/bin/sh\nexec "{sys.executable}"{run}{dry}\n')
            (bin_ / name).chmod(0o755)
        (bin_ / "activate").write_text(f'export PATH="{bin_}:$PATH"\n')
    return copy


def run_block(block: str, where: Path, scratch: Path) -> list[tuple[Command, int, str]]:
    """Each command in one bash, in order (a `cd`, a variable, a `&` job carry over), each
    one's output and exit code kept apart."""
    cmds = commands(block)
    scratch.mkdir()
    (scratch / "in_a_terminal.py").write_text(TTY)
    script = []
    for i, cmd in enumerate(cmds):
        line = f'"{sys.executable}" "{scratch}/in_a_terminal.py" {shlex.quote(cmd.line)}' if cmd.terminal else cmd.line
        script.append(f'{{ {line}\n}} >"{scratch}/{i}" 2>&1 </dev/null; echo $? >"{scratch}/{i}.rc"')
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.Popen(["bash", "-c", "\n".join(script)], cwd=where, env=env, start_new_session=True)
    try:
        done.wait(timeout=900)
    finally:
        try:
            os.killpg(done.pid, signal.SIGKILL)  # a server a block left running
        except ProcessLookupError:
            pass
    return [(cmd, int((scratch / f"{i}.rc").read_text()), (scratch / f"{i}").read_text(errors="replace")) for i, cmd in enumerate(cmds)]


RUN = [(kind, body) for kind, body in SHELL if kind != "suite"]


@pytest.mark.parametrize(("kind", "block"), RUN, ids=[f"sh-{i}-{kind or 'offline'}" for i, (kind, _) in enumerate(RUN)])
def test_each_shell_block_runs_as_written(kind, block, tmp_path):
    if kind == "live" and not LIVE:
        pytest.skip("needs llama.cpp and a model server: run with HARNESS_TEST_SERVER set, as bash .ci/run does")
    assert kind in ("", "fresh", "live"), f"```sh {kind}: unknown kind"
    for cmd, code, output in run_block(block, checkout(tmp_path, kind), tmp_path / "outputs"):
        assert code == cmd.exits, f"{cmd.line!r} exited {code}, not {cmd.exits}:\n{output}"
        for says in cmd.says:
            assert says in output, f"{cmd.line!r} did not say {says!r}:\n{output}"


def test_the_readme_s_test_command_uses_every_core_and_is_what_ci_runs():
    (suite,) = [body for kind, body in SHELL if kind == "suite"]
    args = suite.strip().split("-m pytest", 1)[1].split()
    assert args[:2] == ["-n", "auto"]  # pytest-xdist, as many workers as cores
    ci = [line.split("-m pytest", 1)[1].split() for line in (ROOT / ".ci" / "run").read_text().splitlines() if "-m pytest" in line]
    assert ci and ci[-1] == args, "bash .ci/run runs another test command than the README's"


WRITES = re.compile(r"(?:--save|--save-dir|--report|--junit|--html|--markdown|--transcript|mkdir)\s+(\S+)|(?<![0-9&])>\s*([^\s&]+)")


def test_each_recipe_writes_into_folders_and_files_of_its_own():
    # A reader runs the recipes one after another in one checkout: one recipe's output must
    # never replace another's (the replay recipe once overwrote the batch's recordings).
    seen: dict[str, int] = {}
    for i, (_, block) in enumerate(SHELL):
        lines = "\n".join(cmd.line.partition("  # ")[0] for cmd in commands(block))
        for path in {a or b for a, b in WRITES.findall(lines)} - {"/dev/null"}:
            assert seen.setdefault(path, i) == i, f"{path} is written by two README blocks"
    assert len(seen) >= 8


# -- the layout --------------------------------------------------------------------------


def layout() -> dict[str, str]:
    """The README's Layout list: entry (`name.py`, `name/`, `prompts/`) -> its text."""
    section = README.split("## Layout", 1)[1]
    entries: dict[str, str] = {}
    last = ""
    for line in section.splitlines():
        if m := re.match(r"    (?:    )?(\S+\.py|\S+/)(?:\s|$)(.*)", line):
            last = m[1] if line.startswith("        ") else "/" + m[1]
            entries[last] = m[2]
        elif line.startswith("        ") and last:
            entries[last] += " " + line.strip()
    return entries


def test_the_layout_lists_every_module_of_the_package_and_nothing_else():
    listed = layout()
    package = ROOT / "harness"
    modules = {p.name for p in package.glob("*.py") if not p.name.startswith("__")}
    packages = {p.parent.name + "/" for p in package.glob("*/__init__.py")}
    assert {e for e in listed if not e.startswith("/")} == modules | packages
    for name in packages:
        inside = {p.name for p in (package / name).glob("*.py") if not p.name.startswith("__")}
        assert set(re.findall(r"\w+\.py", listed[name])) == inside, name
    for top in (e.lstrip("/") for e in listed if e.startswith("/") and e != "/harness/"):
        assert (ROOT / top).exists(), top
